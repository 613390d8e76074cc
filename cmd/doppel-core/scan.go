package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/doppelfs/doppel/internal/control"
	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/volume"
)

const scanAbout = `Run CMD once per distinct file content found below the DIRs (trees of one
mounted volume), and report every path that shares each result: a file
shared by eight clones is scanned once (Prism's central virus scan). In
ARGS, {} stands for the path of one file with that content (appended if no
argument has {}). Contents are told apart by their chunks, without reading
them; clones are not materialized.

With --since SNAPSHOT, content that SNAPSHOT (any tree of the volume) also
holds is skipped: only what is new since then is scanned.

Output: one block per content: the command's exit status and output, then
the paths. --json prints a list of {id, size, paths, exit_code, output}.
The exit status is 1 if CMD failed for any content, 0 otherwise.`

type scanResult struct {
	namespace.ContentGroup
	ExitCode int    `json:"exit_code"`
	Output   string `json:"output"`
}

func runScan(args []string) error {
	fs := newFlags("scan", "[--json] [--since SNAPSHOT] DIR... -- CMD [ARGS with {}]", scanAbout)
	asJSON := fs.Bool("json", false, "print JSON")
	since := fs.String("since", "", "skip content that this tree (a snapshot) also holds")
	dashes := -1
	for i, a := range args {
		if a == "--" {
			dashes = i
			break
		}
	}
	if dashes < 0 || dashes == len(args)-1 {
		return usagef("need DIR... -- CMD (see --help)")
	}
	pos, err := parse(fs, args[:dashes])
	if err != nil {
		return err
	}
	cmdArgs := args[dashes+1:]
	if len(pos) == 0 {
		return usagef("need at least one DIR (see --help)")
	}
	var vps []volumePath
	for _, p := range append(pos, *since) {
		if p == "" {
			continue
		}
		vp, err := resolveVolumePath(p, "")
		if err != nil {
			return err
		}
		if vp.Mountpoint == "" {
			return fmt.Errorf("%s: not below a mounted doppel volume (scan runs CMD on the mounted files)", p)
		}
		if len(vps) > 0 && vp.Store != vps[0].Store {
			return fmt.Errorf("%s is not in the same volume as %s", p, pos[0])
		}
		vps = append(vps, vp)
	}
	req := control.ScanRequest{}
	for _, vp := range vps[:len(pos)] {
		req.Paths = append(req.Paths, vp.Path)
	}
	if *since != "" {
		req.Since = vps[len(vps)-1].Path
	}
	var groups []namespace.ContentGroup
	err = onVolume(vps[0].Store,
		func(c *control.Client) (err error) { groups, err = c.Scan(req); return err },
		func(v *volume.Volume) error { return errors.New("the volume is not mounted") })
	if err != nil {
		return err
	}
	mp := vps[0].Mountpoint
	var results []scanResult
	failed := 0
	progress := newProgressLine(os.Stderr, !*asJSON)
	for i, g := range groups {
		progress.show(func() string { return fmt.Sprintf("scanning %d/%d contents", i+1, len(groups)) })
		r := scanResult{ContentGroup: g}
		r.ExitCode, r.Output = runOn(cmdArgs, mp+g.Paths[0])
		if r.ExitCode != 0 {
			failed++
		}
		results = append(results, r)
	}
	progress.done()
	if *asJSON {
		if results == nil {
			results = []scanResult{} // [], not null, when there is nothing to scan
		}
		if err := printJSON(results); err != nil {
			return err
		}
	} else {
		files := 0
		for _, r := range results {
			files += len(r.Paths)
			fmt.Printf("content %s (%s): exit %d\n", r.ID, human(r.Size), r.ExitCode)
			if out := strings.TrimRight(r.Output, "\n"); out != "" {
				fmt.Printf("  | %s\n", strings.ReplaceAll(out, "\n", "\n  | "))
			}
			for _, p := range r.Paths {
				fmt.Printf("  %s\n", p)
			}
		}
		fmt.Printf("%d files, %d distinct contents scanned\n", files, len(results))
	}
	if failed > 0 {
		return fmt.Errorf("%s failed for %d of %d contents", cmdArgs[0], failed, len(results))
	}
	return nil
}

// runOn runs the command with {} replaced by path.
func runOn(args []string, path string) (int, string) {
	argv := make([]string, 0, len(args)+1)
	replaced := false
	for _, a := range args {
		if strings.Contains(a, "{}") {
			replaced = true
		}
		argv = append(argv, strings.ReplaceAll(a, "{}", path))
	}
	if !replaced {
		argv = append(argv, path)
	}
	var out bytes.Buffer
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	}
	return 127, err.Error()
}
