package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/doppelfs/doppel/internal/importer"
	"github.com/doppelfs/doppel/internal/ops"
)

func runImport(args []string) error {
	fs := newFlags("import", "[--store DIR] [-j N] [--quiet] SRC DST",
		"Copy the host directory tree (or file) SRC into a volume, mounted or not, much\n"+
			"faster than cp -a through the mount: files are read and chunked in parallel\n"+
			"and written straight to the volume, without FUSE round trips. When the volume\n"+
			"is mounted its daemon does the work (it must be able to read SRC).\n\n"+
			"DST is a path under a mounted volume, or, with --store (or when no mount\n"+
			"holds it), a path inside the store's volume, / being its root. If DST is an\n"+
			"existing directory, SRC becomes DST/NAME (NAME = SRC's last component), like\n"+
			"cp -a; otherwise DST is created and its parent must exist. What is created\n"+
			"must not exist yet: an import never replaces or merges into anything.\n\n"+
			"Kept: content (holes stay holes), modes, owners, atime and mtime, extended\n"+
			"attributes (system.* ones such as ACLs are skipped with a warning), hard\n"+
			"links within SRC, symlinks (not followed; SRC/ with a slash follows SRC),\n"+
			"fifos, sockets and device nodes. SRC may not lie inside the destination\n"+
			"volume or its store; a SRC above them skips them.\n\n"+
			"Errors: an entry of SRC that cannot be read is reported with its path and left\n"+
			"out (a file that failed halfway is removed again); the import goes on with the\n"+
			"rest and exits with status 1 at the end. An error of the volume itself (e.g.\n"+
			"no space) or an interruption stops at once; what was imported so far stays.\n\n"+
			"Progress goes to stderr, the summary (bytes read, new chunk data stored) to\n"+
			"stdout.")
	store := storeFlag(fs)
	jobs := fs.Int("j", defaultImportJobs, "files read and chunked at once (0: one per CPU)")
	quiet := fs.Bool("quiet", false, "no progress display")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("need SRC and DST (see --help)")
	}
	if *jobs < 0 {
		return usagef("-j must be 0 or more")
	}
	src, err := filepath.Abs(pos[0])
	if err != nil {
		return err
	}
	if strings.HasSuffix(pos[0], "/") && src != "/" {
		src += "/" // the importer follows a symlink named SRC/
	}
	dst, err := resolveVolumePath(pos[1], *store)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	show := newImportDisplay(os.Stderr, *quiet)
	var sum importer.Summary
	stopProfiles, err := recordProfiles() // of an import run here, on an unmounted volume
	if err != nil {
		return err
	}
	req := ops.ImportRequest{Src: src, Dst: dst.Path, Jobs: *jobs, ProgressEvery: show.interval()}
	err = withVolume(dst.Store, func(v ops.API) (err error) { sum, err = v.Import(ctx, req, show.progress); return err })
	stopProfiles()
	show.done()
	if sum.Target != "" {
		printImportSummary(os.Stdout, os.Stderr, src, dst.Store, sum, err == nil)
	}
	if err != nil {
		return err
	}
	if n := len(sum.Failures); n > 0 {
		return fmt.Errorf("could not import %d of the entries of %s (listed above); everything else was imported", n, src)
	}
	return nil
}

// defaultImportJobs is 0, one worker per CPU: see docs/BENCHMARKS.md.
const defaultImportJobs = 0
