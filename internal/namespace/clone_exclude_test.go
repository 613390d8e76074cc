package namespace_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
)

// TestClonePinKeepsNothingExcluded clones a tree leaving out a large
// subtree, then deletes that subtree in the source: its chunks must be
// freed at once, since the clone's pin keeps only what the clone can see.
// A file with a name in both parts stays retained: after the source
// rewrites it, the clone still reads it as it was, as it does every file
// it shows. Also through a lazy clone of the clone, after the clone that
// excluded the subtree was removed and the volume remounted (its pin
// lives on for the later clone, and its exclusions with it).
func TestClonePinKeepsNothingExcluded(t *testing.T) {
	for _, through := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "through a removed clone"}[through], func(t *testing.T) {
			testClonePinKeepsNothingExcluded(t, through)
		})
	}
}

func testClonePinKeepsNothingExcluded(t *testing.T, through bool) {
	v, vdir := openVolume(t)
	fs := v.NS
	data := func(seed uint64) []byte {
		b := make([]byte, 48<<10)
		rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}).Read(b)
		return b
	}
	top := testutil.Must(fs.Mkdir(root, vfs.RootIno, "t", 0o755)).Ino
	big := testutil.Must(fs.Mkdir(root, top, "big", 0o755)).Ino
	sub := testutil.Must(fs.Mkdir(root, big, "sub", 0o755)).Ino // first among shared's parents
	keep := testutil.Must(fs.Mkdir(root, top, "keep", 0o755)).Ino
	kept := writeFile(t, fs, keep, "k", data(1))
	shared := writeFile(t, fs, keep, "shared", data(2))
	base := v.Engine.Stats().Chunks
	for i := range 20 {
		writeFile(t, fs, []uint64{big, sub}[i%2], "f"+strconv.Itoa(i), data(uint64(100+i)))
	}
	testutil.Must(fs.Link(shared, sub, "also")) // one name excluded, one not
	if through {
		testutil.Must(fs.ClonePath("/t", "/c1", namespace.CloneOptions{Lazy: true, Excludes: []string{"big"}}))
		testutil.Must(fs.ClonePath("/c1", "/c", namespace.CloneOptions{Lazy: true}))
		removeAll(t, fs, vfs.RootIno, "c1")
		v = reopen(t, v, vdir)
		fs = v.NS
	} else {
		testutil.Must(fs.ClonePath("/t", "/c", namespace.CloneOptions{Lazy: true, Excludes: []string{"big"}}))
	}

	for i := range 20 {
		testutil.Must(0, fs.Unlink([]uint64{big, sub}[i%2], "f"+strconv.Itoa(i)))
	}
	testutil.Must(0, fs.Unlink(sub, "also"))
	testutil.Must(0, fs.Rmdir(big, "sub"))
	testutil.Must(0, fs.Rmdir(top, "big"))
	if got := v.Engine.Stats().Chunks; got != base {
		t.Errorf("%d chunks after the excluded subtree went, want %d: the clone's pin keeps what it cannot see", got, base)
	}

	// What the clone shows stays as it was.
	for _, f := range []struct {
		ino  uint64
		seed uint64
	}{{kept, 1}, {shared, 2}} {
		h := testutil.Must(fs.Open(f.ino, syscall.O_RDWR))
		testutil.Must(fs.Write(h, 0, data(f.seed+50)))
		testutil.Must(0, fs.Release(h))
	}
	c := testutil.Must(fs.Lookup(vfs.RootIno, "c")).Ino
	ck := testutil.Must(fs.Lookup(c, "keep")).Ino
	for _, f := range []struct {
		name string
		seed uint64
	}{{"k", 1}, {"shared", 2}} {
		if got := readFile(t, fs, testutil.Must(fs.Lookup(ck, f.name)).Ino); !bytes.Equal(got, data(f.seed)) {
			t.Errorf("c/keep/%s changed after the source rewrote it", f.name)
		}
	}
	if _, err := fs.Lookup(c, "big"); err != syscall.ENOENT {
		t.Errorf("c/big: %v, want ENOENT", err)
	}
	wantFsckClean(t, v)
}

// TestDiffKeepsExclusionsOfMaterializedMiddle diffs a clone of a clone
// whose middle clone, made with an exclusion, materialized its root: the
// walk reads the middle clone's stubs through a pin, and must still leave
// out what the middle clone excluded below them (it showed them as
// present, and with pins narrowed to what their clone sees, failed to
// find their records).
func TestDiffKeepsExclusionsOfMaterializedMiddle(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	top := testutil.Must(fs.Mkdir(root, vfs.RootIno, "t", 0o755)).Ino
	e := testutil.Must(fs.Mkdir(root, top, "e", 0o755)).Ino
	c := testutil.Must(fs.Mkdir(root, e, "c", 0o755)).Ino
	writeFile(t, fs, c, "x1", []byte("left out"))
	writeFile(t, fs, c, "keep", []byte("shown"))
	testutil.Must(fs.ClonePath("/t", "/c1", namespace.CloneOptions{Lazy: true, Excludes: []string{"x1"}}))
	c1 := testutil.Must(fs.Lookup(vfs.RootIno, "c1")).Ino
	writeFile(t, fs, c1, "new", []byte("materializes c1's root"))
	testutil.Must(fs.ClonePath("/c1", "/c2", namespace.CloneOptions{Lazy: true}))
	for _, full := range []bool{false, true} {
		res, err := fs.Diff(context.Background(), "/t", "/c2", namespace.DiffOptions{Full: full})
		if err != nil {
			t.Fatalf("diff (full %v): %v", full, err)
		}
		want := []string{"A\tnew", "D\te/c/x1"}
		if got := diffLines(res.Entries, false); !slices.Equal(got, want) {
			t.Errorf("diff t c2 (full %v):\n got %q\nwant %q", full, got, want)
		}
	}
}
