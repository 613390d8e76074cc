package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/ops"
)

const fsckAbout = `Check a volume's consistency; with --repair, repair it.

An unmounted volume (--store DIR, $DOPPEL_STORE or the default store) is
opened for exclusive use; a check alone changes nothing. A mounted volume
(its MOUNTPOINT, or its store) is checked by its daemon, on one consistent
snapshot of its metadata, while it goes on serving.

Checked: each chunk's refcount against the extents naming it; every chunk
exists and lies inside its segment (--verify-data also reads every chunk and
checks its hash); the directory tree, back-references and link counts;
xattrs and orphan markers; the space counters; that every record decodes.
Segment space no chunk uses is reported as reclaimable, which is no damage.

Output: one line per problem, KIND PATH DETAIL separated by tabs (PATH is a
path of the file concerned, empty if none), then a summary.

--repair, unmounted: each repair is one metadata transaction. Refcounts,
link counts, sizes, back-references and the space counters are set right;
entries naming missing inodes, and xattrs and extents of missing inodes, are
deleted; unreachable files and directories are reconnected as
/lost+found/#INO; unused segment space and pending frees are punched.
DATA LOSS: extents whose chunk is missing, outside its segment or damaged
(found by --verify-data only) are replaced by holes, so that those ranges read
as zeros instead of failing with EIO. Each such range is printed on a LOST
DATA line. The volume is then checked again.

--repair, mounted: only refcounts, the space counters and unused space in
segments of earlier sessions are repaired; the rest needs the volume
unmounted ('doppel umount MOUNTPOINT', then 'doppel fsck --repair --store DIR').

Exit status: 0 clean (with --repair: clean after repairing), 1 problems
found or left, 2 the check could not run. See docs/FSCK.md.`

// runFsck exits with the status fsckMain gives, 2 when the check could
// not run.
func runFsck(args []string) error {
	code, err := fsckMain(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		fmt.Fprintf(os.Stderr, "doppel fsck: %v\n", err)
		os.Exit(2)
	}
	if code != 0 {
		os.Exit(code)
	}
	return nil
}

func fsckMain(args []string) (int, error) {
	fs := newFlags("fsck", "[--repair] [--verify-data] [--json] [--store DIR | MOUNTPOINT]", fsckAbout)
	store := storeFlag(fs)
	logFlag(fs, "warn")
	verify := fs.Bool("verify-data", false, "read every chunk and check its hash (reads all stored data)")
	repair := fs.Bool("repair", false, "repair what can be repaired (see above: damaged data becomes zeros)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return 0, err
	}
	dir, err := volumeArg(pos, *store)
	if err != nil {
		return 0, err
	}
	prog := newProgressLine(os.Stderr, !*asJSON)
	show := func(p fsck.Progress) { prog.show(func() string { return progressText(p, *verify) }) }
	req := ops.FsckRequest{VerifyData: *verify, Repair: *repair}
	var res ops.FsckResult
	err = withVolumeForCheck(dir, func(v ops.API) (err error) { res, err = v.Fsck(context.Background(), req, show); return err })
	prog.done()
	if err != nil {
		return 0, err
	}
	if res.Repair != nil {
		return printRepair(dir, res.Repair, *verify, *asJSON)
	}
	if res.Report == nil {
		return 0, errors.New("the daemon sent no report")
	}
	if *asJSON {
		err = printJSON(fsckJSON{dir, res.Report.Clean(), res.Report.Errors(), res.Report})
	} else {
		printFsck(os.Stdout, dir, res.Report, *verify)
	}
	if err != nil {
		return 0, err
	}
	if !res.Report.Clean() {
		return 1, nil
	}
	return 0, nil
}

func progressText(p fsck.Progress, verify bool) string {
	if p.Phase == fsck.PhaseChunks && p.Total > 0 {
		what := "checking chunk locations"
		if verify {
			what = "verifying chunk data"
		}
		return fmt.Sprintf("fsck: %s %3d%% (%s of %s)", what, p.Done*100/p.Total, human(p.Done), human(p.Total))
	}
	return fmt.Sprintf("fsck: reading metadata (%s): %d records", p.Step, p.Done)
}

// fsckJSON is the --json output of a check.
type fsckJSON struct {
	Store  string `json:"store"`
	Clean  bool   `json:"clean"`
	Errors int    `json:"errors"`
	*fsck.Report
}

func printFsck(w io.Writer, dir string, r *fsck.Report, verified bool) {
	for _, p := range r.Problems {
		fmt.Fprintf(w, "%s\t%s\t%s\n", p.Kind, printable(p.Path), p.Detail)
	}
	how := "checked"
	if r.Online {
		how = "checked online"
	}
	fmt.Fprintf(w, "%s %s: %d inodes (%d directories, %d files), %d extents", how, dir, r.Inodes, r.Directories, r.Files, r.Extents)
	if r.HintedExtents > 0 {
		fmt.Fprintf(w, " (%d with location hints, %d of them stale)", r.HintedExtents, r.StaleHints)
	}
	fmt.Fprintf(w, ", %d chunks in %d segments", r.Chunks, r.Segments)
	if verified {
		fmt.Fprintf(w, ", %s of chunk data verified", human(r.BytesVerified))
	}
	fmt.Fprintln(w)
	if r.UnsettledBlocks > 0 {
		fmt.Fprintf(w, "%d blocks of disk images were being written in place when the volume stopped: not verified; the next mount or fsck --repair takes their bytes as it finds them\n", r.UnsettledBlocks)
	}
	errs, reclaim := r.Errors(), len(r.Problems)-r.Errors()
	switch {
	case errs > 0:
		fmt.Fprintf(w, "%d problems found\n", errs)
	case reclaim == 0:
		fmt.Fprintln(w, "clean")
	}
	if reclaim > 0 {
		fmt.Fprintf(w, "%s of segment space is held by no chunk (reclaimable, not damage; fsck --repair punches it)\n", human(r.ReclaimableBytes))
	}
}

// printable quotes a path that would break the line format.
func printable(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return strconv.Quote(s)
	}
	return s
}
