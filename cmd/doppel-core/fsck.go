package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/control"
	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/volume"
	"golang.org/x/sys/unix"
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
	req := control.FsckRequest{VerifyData: *verify, Repair: *repair}
	var res control.FsckResult
	err = onStore(dir,
		func(c *control.Client) (err error) { res, err = c.Fsck(req, show); return err },
		openForCheck,
		func(s fsck.Stores) (err error) { res, err = fsckOffline(s, req, show); return err })
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

// fsckOffline checks or repairs an unmounted volume.
func fsckOffline(s fsck.Stores, req control.FsckRequest, progress func(fsck.Progress)) (control.FsckResult, error) {
	opt := fsck.Options{VerifyData: req.VerifyData, Progress: progress}
	if req.Repair {
		rr, err := fsck.Repair(s, opt, slog.Default())
		return control.FsckResult{Repair: rr}, err
	}
	rep, err := fsck.Check(s, opt)
	return control.FsckResult{Report: rep}, err
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

// openForCheck opens the volume's stores without starting the file system
// on them: a mount would delete orphans and needs intact counters, while
// fsck must only read (unless repairing) and must work on a damaged
// volume. A volume in use gives an error wrapping volume.ErrInUse.
func openForCheck(dir string) (fsck.Stores, func() error, error) {
	if err := volume.CheckFormat(dir); err != nil {
		return fsck.Stores{}, nil, err // not a volume, or one this doppel must not touch
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fsck.Stores{}, nil, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return fsck.Stores{}, nil, fmt.Errorf("%s: %w", dir, volume.ErrInUse)
		}
		return fsck.Stores{}, nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	lock.Truncate(0)
	lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	s, err := openStores(dir)
	if err != nil {
		lock.Close()
		return fsck.Stores{}, nil, err
	}
	return s, func() error {
		err := errors.Join(s.Blobs.Close(), s.Meta.Close())
		lock.Close()
		return err
	}, nil
}

func openStores(dir string) (fsck.Stores, error) {
	metaDir := filepath.Join(dir, "meta")
	if _, err := os.Stat(metaDir); err != nil {
		return fsck.Stores{}, fmt.Errorf("metadata store: %w", err)
	}
	m, err := meta.OpenPebble(metaDir)
	if err != nil {
		return fsck.Stores{}, err
	}
	if raw, err := m.Get(schema.KeyConfig); err == nil {
		// fsck reports a bad config; one of a newer doppel it must not touch.
		if _, err := schema.DecodeConfig(raw); errors.Is(err, schema.ErrNewerFormat) {
			m.Close()
			return fsck.Stores{}, fmt.Errorf("%s: %w", dir, err)
		}
	}
	b, err := blob.OpenDir(filepath.Join(dir, "chunks"), blob.Options{})
	if err != nil {
		m.Close()
		return fsck.Stores{}, err
	}
	return fsck.Stores{Dir: dir, Meta: m, Blobs: b}, nil
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
	fmt.Fprintf(w, "%s %s: %d inodes (%d directories, %d files), %d extents, %d chunks in %d segments",
		how, dir, r.Inodes, r.Directories, r.Files, r.Extents, r.Chunks, r.Segments)
	if verified {
		fmt.Fprintf(w, ", %s of chunk data verified", human(r.BytesVerified))
	}
	fmt.Fprintln(w)
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
