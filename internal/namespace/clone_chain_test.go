package namespace_test

import (
	"context"
	"testing"

	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

// TestCloneLinkCountsThroughChains checks the link count of a hard-linked
// file seen through clones of clones, each leaving out some of its names:
// by exclusion, or by cloning a subdirectory. Each clone counts exactly
// the names it shows, whether the clone between was materialized or not,
// and removing those names frees the file.
func TestCloneLinkCountsThroughChains(t *testing.T) {
	for _, lazy := range []bool{true, false} {
		v, _ := openVolume(t)
		fs := v.NS
		top := testutil.Must(fs.Mkdir(root, vfs.RootIno, "t", 0o755)).Ino
		d := testutil.Must(fs.Mkdir(root, top, "d", 0o755)).Ino
		other := testutil.Must(fs.Mkdir(root, top, "other", 0o755)).Ino
		f := writeFile(t, fs, d, "f", []byte("linked"))
		testutil.Must(fs.Link(f, d, "x1"))
		testutil.Must(fs.Link(f, other, "g"))

		// a: /t without d/x1; b: a's d; c: b again, lazily.
		for _, c := range []struct{ src, dst string }{{"/t", "/a"}, {"/a/d", "/b"}, {"/b", "/c"}} {
			o := namespace.CloneOptions{Lazy: lazy || c.dst == "/c"}
			if c.dst == "/a" {
				o.Excludes = []string{"d/x1"}
			}
			testutil.Must(fs.ClonePath(c.src, c.dst, o))
		}
		for _, c := range []struct {
			path  []string
			links uint32
		}{
			{[]string{"t", "d", "f"}, 3},
			{[]string{"a", "d", "f"}, 2}, // and other/g
			{[]string{"b", "f"}, 1},
			{[]string{"c", "f"}, 1},
		} {
			ino := uint64(vfs.RootIno)
			for _, name := range c.path {
				ino = testutil.Must(fs.Lookup(ino, name)).Ino
			}
			if got := testutil.Must(fs.GetAttr(ino)).Nlink; got != c.links {
				t.Errorf("lazy %v: %v has %d links, want %d", lazy, c.path, got, c.links)
			}
		}
		for _, p := range []string{"c", "b"} {
			testutil.Must(0, fs.Unlink(testutil.Must(fs.Lookup(vfs.RootIno, p)).Ino, "f"))
		}
		wantFsckClean(t, v)
	}
}

// TestCloneOfRemovedCloneKeepsExclusions removes a clone with exclusions
// while a lazy clone of it still reads through it: the exclusions must
// still apply after a remount, when nothing is cached.
func TestCloneOfRemovedCloneKeepsExclusions(t *testing.T) {
	v, dir := openVolume(t)
	fs := v.NS
	top := testutil.Must(fs.Mkdir(root, vfs.RootIno, "t", 0o755)).Ino
	sub := testutil.Must(fs.Mkdir(root, top, "sub", 0o755)).Ino
	writeFile(t, fs, sub, "secret", []byte("s"))
	writeFile(t, fs, sub, "kept", []byte("k"))
	testutil.Must(fs.ClonePath("/t", "/a", namespace.CloneOptions{Lazy: true, Excludes: []string{"secret"}}))
	testutil.Must(fs.ClonePath("/a", "/b", namespace.CloneOptions{Lazy: true}))
	a := testutil.Must(fs.Lookup(vfs.RootIno, "a")).Ino
	asub := testutil.Must(fs.Lookup(a, "sub")).Ino
	for _, e := range testutil.Must(fs.ReadDir(asub)) {
		testutil.Must(0, fs.Unlink(asub, e.Name))
	}
	testutil.Must(0, fs.Rmdir(a, "sub"))
	testutil.Must(0, fs.Rmdir(vfs.RootIno, "a"))
	v = reopen(t, v, dir)
	fs = v.NS
	b := testutil.Must(fs.Lookup(vfs.RootIno, "b")).Ino
	var names []string
	for _, e := range testutil.Must(fs.ReadDir(testutil.Must(fs.Lookup(b, "sub")).Ino)) {
		names = append(names, e.Name)
	}
	if len(names) != 1 || names[0] != "kept" {
		t.Fatalf("b/sub holds %v, want [kept]", names)
	}
}

// TestCloneLinkCountAfterRenameInMiddleClone renames, inside a clone, a
// directory that still reads through the clone's pin and holds both names
// of a hard-linked file, then clones the renamed directory: the new clone
// must count both names (one too few would free the file while a name is
// left).
func TestCloneLinkCountAfterRenameInMiddleClone(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	a := linkedThenCloned(t, v, "d", "x")
	testutil.Must(0, fs.Rename(a, "d", a, "e", 0)) // a/d stays a stub
	testutil.Must(fs.ClonePath("/a/e", "/b", namespace.CloneOptions{Lazy: true}))
	b := testutil.Must(fs.Lookup(vfs.RootIno, "b")).Ino
	bf := testutil.Must(fs.Lookup(b, "f"))
	if bf.Nlink != 2 {
		t.Fatalf("b/f has %d links, want 2 (f and x)", bf.Nlink)
	}
	testutil.Must(0, fs.Unlink(b, "f"))
	if got := readFile(t, fs, testutil.Must(fs.Lookup(b, "x")).Ino); string(got) != "linked" {
		t.Fatalf("b/x reads %q after b/f went", got)
	}
}

// TestCloneLinkCountThroughMaterializedMiddle clones a directory of a lazy
// clone after that directory, and the one holding the file's other name,
// got their own entries: the name outside the new clone must not count.
// (Were a/other still a stub, its pending name would count: see
// linksInView.)
func TestCloneLinkCountThroughMaterializedMiddle(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	a := linkedThenCloned(t, v, "other", "g")
	testutil.Must(fs.ReadDir(testutil.Must(fs.Lookup(a, "d")).Ino)) // a/d gets its own entries
	testutil.Must(fs.ReadDir(testutil.Must(fs.Lookup(a, "other")).Ino))
	testutil.Must(fs.ClonePath("/a/d", "/b", namespace.CloneOptions{Lazy: true}))
	b := testutil.Must(fs.Lookup(vfs.RootIno, "b")).Ino
	if got := testutil.Must(fs.Lookup(b, "f")).Nlink; got != 1 {
		t.Fatalf("b/f has %d links, want 1 (a/other/g is outside b)", got)
	}
	testutil.Must(0, fs.Unlink(b, "f"))
	wantFsckClean(t, v)
}

// linkedThenCloned makes /t/d/f with a second name dir/name below /t
// (dir "d" or a new one), then /a, a lazy clone of /t; it returns /a.
func linkedThenCloned(t *testing.T, v *volume.Volume, dir, name string) uint64 {
	t.Helper()
	fs := v.NS
	top := testutil.Must(fs.Mkdir(root, vfs.RootIno, "t", 0o755)).Ino
	d := testutil.Must(fs.Mkdir(root, top, "d", 0o755)).Ino
	f := writeFile(t, fs, d, "f", []byte("linked"))
	second := d
	if dir != "d" {
		second = testutil.Must(fs.Mkdir(root, top, dir, 0o755)).Ino
	}
	testutil.Must(fs.Link(f, second, name))
	testutil.Must(fs.ClonePath("/t", "/a", namespace.CloneOptions{Lazy: true}))
	return testutil.Must(fs.Lookup(vfs.RootIno, "a")).Ino
}

// wantFsckClean fails t on anything fsck finds but reclaimable space.
func wantFsckClean(t *testing.T, v *volume.Volume) {
	t.Helper()
	rep, err := fsck.CheckLive(context.Background(), v.FsckStores(), v.Engine, fsck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		if p.Kind != fsck.KindPendingFree && p.Kind != fsck.KindOrphanSpace {
			t.Errorf("fsck: %s %s", p.Kind, p.Detail)
		}
	}
}
