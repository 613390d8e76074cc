package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	pathpkg "path"
	"path/filepath"
	"strings"

	"github.com/doppelfs/doppel/internal/ops"
)

const scanAbout = `Run CMD once per distinct file content found below the DIRs (trees of one
volume), and report every path that shares each result: a file shared by
eight clones is scanned once (Prism's central virus scan). In ARGS, {}
stands for the path of one file with that content (appended if no argument
has {}). Contents are told apart by their chunks, without reading them;
clones are not materialized.

With --since SNAPSHOT, content that SNAPSHOT (any tree of the volume) also
holds is skipped: only what is new since then is scanned.

The DIRs are paths under a mounted doppel volume or, when it is not mounted
(or with --store), paths inside the volume of the store. On a mounted
volume CMD gets the file's path in the mount. On an unmounted one, scan
opens the store itself and CMD gets a temporary copy of the file with the
same name and permission bits (in a directory of its own under $TMPDIR,
removed afterwards); the copy is read through clones' pins, so nothing is
materialized.

Output: one block per content: the command's exit status and output, then
the paths. --json prints a list of {id, size, paths, exit_code, output}.
The exit status is 1 if CMD failed for any content, 0 otherwise.`

type scanResult struct {
	ops.ContentGroup
	ExitCode int    `json:"exit_code"`
	Output   string `json:"output"`
}

func runScan(args []string) error {
	fs := newFlags("scan", "[--json] [--store DIR] [--since SNAPSHOT] DIR... -- CMD [ARGS with {}]", scanAbout)
	asJSON := fs.Bool("json", false, "print JSON")
	store := storeFlag(fs)
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
		vp, err := resolveVolumePath(p, *store)
		if err != nil {
			return err
		}
		if len(vps) > 0 && vp.Store != vps[0].Store {
			return fmt.Errorf("%s is not in the same volume as %s", p, pos[0])
		}
		vps = append(vps, vp)
	}
	req := ops.ScanRequest{}
	for _, vp := range vps[:len(pos)] {
		req.Paths = append(req.Paths, vp.Path)
	}
	if *since != "" {
		req.Since = vps[len(vps)-1].Path
	}
	sc := scanner{args: cmdArgs, progress: newProgressLine(os.Stderr, !*asJSON)}
	ctx := context.Background()
	err = withVolume(vps[0].Store, func(v ops.API) error {
		groups, err := v.Scan(ctx, req)
		if err != nil {
			return err
		}
		mp := mountpointOf(vps[0])
		return sc.run(groups, func(path string) (string, func(), error) {
			if mp != "" {
				return filepath.Join(mp, filepath.FromSlash(path)), func() {}, nil
			}
			return copyOut(ctx, v, path)
		})
	})
	if err != nil {
		return err
	}
	results := sc.results
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
	if sc.failed > 0 {
		return fmt.Errorf("%s failed for %d of %d contents", cmdArgs[0], sc.failed, len(results))
	}
	return nil
}

// scanner runs the command once per content group.
type scanner struct {
	args     []string
	progress *progressLine
	results  []scanResult
	failed   int
}

// run runs the command on one file of each group; fileOf gives the host
// path of a volume path and what to do once the command is done with it.
func (s *scanner) run(groups []ops.ContentGroup, fileOf func(path string) (string, func(), error)) error {
	defer s.progress.done()
	for i, g := range groups {
		s.progress.show(func() string { return fmt.Sprintf("scanning %d/%d contents", i+1, len(groups)) })
		host, done, err := fileOf(g.Paths[0])
		if err != nil {
			return fmt.Errorf("%s: %w", g.Paths[0], err)
		}
		r := scanResult{ContentGroup: g}
		r.ExitCode, r.Output = runOn(s.args, host)
		done()
		if r.ExitCode != 0 {
			s.failed++
		}
		s.results = append(s.results, r)
	}
	return nil
}

// mountpointOf is where vp's volume is mounted: the mount the argument
// went through, else (with --store) any mount of the store, else "".
func mountpointOf(vp volumePath) string {
	if vp.Mountpoint != "" {
		return vp.Mountpoint
	}
	ms, err := mounts()
	if err != nil {
		return ""
	}
	for _, m := range ms {
		if m.FSType == fuseType && m.Source == vp.Store {
			return m.Point
		}
	}
	return ""
}

// copyOut copies the volume file at path into a new private directory,
// under the same name and permission bits (readable by its owner), for
// the command to read.
func copyOut(ctx context.Context, v ops.API, path string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "doppel-scan-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	host := filepath.Join(dir, pathpkg.Base(path))
	f, err := os.OpenFile(host, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		var mode uint32
		w := bufio.NewWriterSize(f, 1<<20)
		mode, err = v.CopyFile(ctx, path, w)
		err = errors.Join(err, w.Flush(), f.Chmod(os.FileMode(mode&0o777|0o400)), f.Close())
	}
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return host, cleanup, nil
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
