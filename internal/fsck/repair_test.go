package fsck_test

import (
	"bytes"
	"io"
	"log/slog"
	"slices"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/volume"
)

// files are the regular files newEnv leaves.
var files = []string{"/a", "/d/b", "/solo", "/d/e/holes", "/d/copy"}

// read returns the contents of the file at p, read by inode number so
// that a file reconnected elsewhere is found.
func (e *env) read(p string) ([]byte, error) {
	ino := e.ino[p]
	a, err := e.v.NS.GetAttr(ino)
	if err != nil {
		return nil, err
	}
	h, err := e.v.NS.Open(ino, syscall.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer e.v.NS.Release(h)
	buf := make([]byte, a.Size)
	for off := 0; off < len(buf); {
		n, err := e.v.NS.Read(h, int64(off), buf[off:])
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		off += n
	}
	return buf, nil
}

// contents reads every file.
func (e *env) contents() map[string][]byte {
	m := map[string][]byte{}
	for _, p := range files {
		m[p] = testutil.Must(e.read(p))
	}
	return m
}

// repair closes the volume, repairs its stores as doppel fsck --repair
// does, and opens the volume again.
func (e *env) repair(verify bool) *fsck.RepairReport {
	e.t.Helper()
	testutil.Check(e.t, e.v.Close())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c := testutil.Must(volume.OpenForCheck(e.dir, log)) // either kind of volume
	rr, err := fsck.Repair(c.Stores, fsck.Options{VerifyData: verify}, log)
	testutil.Check(e.t, c.Close())
	testutil.Check(e.t, err)
	for _, r := range rr.Repairs {
		e.t.Logf("repaired %s %q: %s", r.Kind, r.Path, r.Action)
	}
	for _, l := range rr.Lost {
		e.t.Logf("lost %s %d..%d: %s", l.Path, l.Start, l.End, l.Why)
	}
	e.open()
	return rr
}

type repairCase struct {
	name    string
	verify  bool
	damage  func(e *env)
	kind    string   // a repair of this kind must be reported
	path    string   // at this path, unless ""
	lost    []string // files that must lose data
	anyLost bool     // other files may lose data too
	gone    []string // files that are gone
	remains string   // the kind a repair must leave; "" if it leaves the volume clean
}

func TestRepair(t *testing.T) {
	for _, tc := range append(metadataRepairs(), dataRepairs()...) {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, volume.InitOptions{})
			before := e.contents()
			tc.damage(e)
			if r := e.check(tc.verify); r.Clean() && tc.kind != fsck.KindOrphanSpace && tc.kind != fsck.KindPendingFree {
				t.Fatal("the damage is not found")
			}
			rr := e.repair(tc.verify)
			if !slices.ContainsFunc(rr.Repairs, func(r fsck.Repaired) bool {
				return r.Kind == tc.kind && (tc.path == "" || r.Path == tc.path)
			}) {
				t.Fatalf("no %s repair at %q", tc.kind, tc.path)
			}
			after := e.check(true)
			if tc.remains != "" {
				if rr.After.Clean() || !slices.Equal(after.Kinds(), []string{tc.remains}) {
					t.Fatalf("after repair: kinds %v, want only %s left", after.Kinds(), tc.remains)
				}
			} else if !rr.After.Clean() || len(after.Problems) != 0 {
				t.Fatalf("after repair: %d problems, then %v at the next open", len(rr.After.Problems), after.Kinds())
			}
			e.checkData(before, rr.Lost, tc)
		})
	}
}

// checkData checks that every file holds what it held before the damage,
// except the lost ranges, which read as zeros.
func (e *env) checkData(before map[string][]byte, lost []fsck.LostRange, tc repairCase) {
	t := e.t
	t.Helper()
	want := map[string][]byte{}
	for p, b := range before {
		want[p] = bytes.Clone(b)
	}
	losers := map[string]bool{}
	for _, l := range lost {
		if want[l.Path] == nil || (!tc.anyLost && !slices.Contains(tc.lost, l.Path)) {
			t.Fatalf("data of %s reported lost", l.Path)
		}
		losers[l.Path] = true
		clear(want[l.Path][l.Start:min(l.End, int64(len(want[l.Path])))])
	}
	for _, p := range tc.lost {
		if !losers[p] {
			t.Fatalf("no data of %s reported lost", p)
		}
	}
	for _, p := range files {
		got, err := e.read(p)
		if slices.Contains(tc.gone, p) {
			if err == nil {
				t.Fatalf("%s is still there", p)
			}
			continue
		}
		if err != nil {
			t.Fatalf("read %s after repair: %v", p, err)
		}
		if !bytes.Equal(got, want[p]) {
			t.Fatalf("%s holds other data after repair (%d bytes, want %d)", p, len(got), len(want[p]))
		}
	}
}
