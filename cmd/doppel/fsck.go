package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/volume"
	"golang.org/x/sys/unix"
)

// runFsck exits 0 when the volume is clean (reclaimable space is reported
// but counts as clean), 1 when problems were found, 2 when the check could
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
	fs := newFlags("fsck", "[--verify-data] [--json] [--store DIR | MOUNTPOINT]",
		"Check an unmounted volume's consistency; nothing is repaired. Prints one line\n"+
			"per problem (KIND, PATH, DETAIL separated by tabs), then a summary. Exit status:\n"+
			"0 clean (reclaimable space is reported but is no damage), 1 problems found,\n"+
			"2 the check could not run.")
	store := storeFlag(fs)
	verify := fs.Bool("verify-data", false, "read every chunk and check its hash (reads all stored data)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return 0, err
	}
	dir, err := volumeArg(pos, *store)
	if err != nil {
		return 0, err
	}
	v, release, err := openForCheck(dir)
	if err != nil {
		return 0, err
	}
	defer release()
	prog := newProgress(os.Stderr)
	rep, err := fsck.Check(v, fsck.Options{VerifyData: *verify, Progress: prog.update})
	prog.done()
	if err != nil {
		return 0, err
	}
	if *asJSON {
		out := struct {
			Store  string `json:"store"`
			Clean  bool   `json:"clean"`
			Errors int    `json:"errors"`
			*fsck.Report
		}{dir, rep.Clean(), rep.Errors(), rep}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return 0, err
		}
	} else {
		printFsck(os.Stdout, dir, rep, *verify)
	}
	if !rep.Clean() {
		return 1, nil
	}
	return 0, nil
}

// openForCheck opens the volume's stores without starting the file system
// on them: a mount would delete orphans and needs intact counters, while
// fsck must only read and must work on a damaged volume.
func openForCheck(dir string) (*volume.Volume, func(), error) {
	if _, err := os.Stat(filepath.Join(dir, volume.FormatFile)); err != nil {
		return nil, nil, fmt.Errorf("%s: %w (no %s)", dir, volume.ErrNotVolume, volume.FormatFile)
	}
	if pid := volume.LockHolder(dir); pid > 0 {
		return nil, nil, errMounted(dir, pid)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil, errMounted(dir, volume.LockHolder(dir))
		}
		return nil, nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	lock.Truncate(0)
	lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	v, err := openStores(dir)
	if err != nil {
		lock.Close()
		return nil, nil, err
	}
	return v, func() { v.Close(); lock.Close() }, nil
}

func openStores(dir string) (*volume.Volume, error) {
	metaDir := filepath.Join(dir, "meta")
	if _, err := os.Stat(metaDir); err != nil {
		return nil, fmt.Errorf("metadata store: %w", err)
	}
	m, err := meta.OpenPebble(metaDir)
	if err != nil {
		return nil, err
	}
	v := &volume.Volume{Dir: dir, Meta: m}
	if raw, err := m.Get(schema.KeyConfig); err == nil {
		v.Config, _ = schema.DecodeConfig(raw) // fsck reports a bad one
	}
	if v.Blobs, err = blob.OpenDir(filepath.Join(dir, "chunks"), blob.Options{}); err != nil {
		m.Close()
		return nil, err
	}
	return v, nil
}

func errMounted(dir string, pid int) error {
	by := ""
	if pid > 0 {
		by = fmt.Sprintf(" by process %d", pid)
	}
	return fmt.Errorf("volume %s is in use%s (mounted?); fsck checks unmounted volumes only "+
		"(online checking comes later): unmount it with 'doppel umount MOUNTPOINT' and run fsck again", dir, by)
}

func printFsck(w io.Writer, dir string, r *fsck.Report, verified bool) {
	for _, p := range r.Problems {
		fmt.Fprintf(w, "%s\t%s\t%s\n", p.Kind, printable(p.Path), p.Detail)
	}
	fmt.Fprintf(w, "checked %s: %d inodes (%d directories, %d files), %d extents, %d chunks in %d segments",
		dir, r.Inodes, r.Directories, r.Files, r.Extents, r.Chunks, r.Segments)
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
		fmt.Fprintf(w, "%s of segment space is held by no chunk (reclaimable, not damage)\n", human(r.ReclaimableBytes))
	}
}

// printable quotes a path that would break the line format.
func printable(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return strconv.Quote(s)
	}
	return s
}

// progress draws a progress line on a terminal once a check runs long.
type progress struct {
	w           *os.File
	tty         bool
	start, last time.Time
	shown       bool
}

func newProgress(w *os.File) *progress {
	return &progress{w: w, tty: isTerminal(w), start: time.Now()}
}

func (p *progress) update(done, total int64) {
	now := time.Now()
	if !p.tty || now.Sub(p.start) < time.Second || now.Sub(p.last) < 200*time.Millisecond || total == 0 {
		return
	}
	p.last, p.shown = now, true
	fmt.Fprintf(p.w, "\rfsck: checking chunks %3d%% (%s of %s)\033[K", done*100/total, human(done), human(total))
}

func (p *progress) done() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
