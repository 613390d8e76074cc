package namespace_test

import (
	"strings"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
)

// TestCloneLinkCountPendingOutsideMaterializedMiddle clones a directory of
// a lazy clone that got its own entries while the file's other name is
// still pending in a stub directory of that clone, outside the directory
// cloned (directly, below a stub subdirectory, or through a further lazy
// clone in between): the new clone shows one name, so its count is one,
// and removing that name frees the file.
func TestCloneLinkCountPendingOutsideMaterializedMiddle(t *testing.T) {
	for _, c := range []struct {
		name  string
		other string // where the second name lives below /t
		chain bool   // clone /a again before materializing
		gone  bool   // remove the middle clones and remount before counting
	}{
		{"stub sibling", "other", false, false},
		{"below a stub", "other/deep", false, false},
		{"through a clone of a clone", "other", true, false},
		{"below a stub through a clone of a clone", "other/deep", true, false},
		{"middle clone removed, remounted", "other/deep", false, true},
		{"middle clones removed, remounted", "other", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, vdir := openVolume(t)
			fs := v.NS
			top := testutil.Must(fs.Mkdir(root, vfs.RootIno, "t", 0o755)).Ino
			d := testutil.Must(fs.Mkdir(root, top, "d", 0o755)).Ino
			f := writeFile(t, fs, d, "f", []byte("linked"))
			dir := top
			for _, name := range strings.Split(c.other, "/") {
				dir = testutil.Must(fs.Mkdir(root, dir, name, 0o755)).Ino
			}
			testutil.Must(fs.Link(f, dir, "g"))
			testutil.Must(fs.ClonePath("/t", "/a", namespace.CloneOptions{Lazy: true}))
			mid := "/a"
			if c.chain {
				testutil.Must(fs.ClonePath("/a", "/a2", namespace.CloneOptions{Lazy: true}))
				mid = "/a2"
			}
			m := testutil.Must(fs.Lookup(vfs.RootIno, mid[1:])).Ino
			testutil.Must(fs.ReadDir(testutil.Must(fs.Lookup(m, "d")).Ino)) // mid/d gets its own entries
			testutil.Must(fs.ClonePath(mid+"/d", "/b", namespace.CloneOptions{Lazy: true}))
			if c.gone {
				removeAll(t, fs, vfs.RootIno, mid[1:])
				if c.chain {
					removeAll(t, fs, vfs.RootIno, "a")
				}
				v = reopen(t, v, vdir)
				fs = v.NS
			}
			b := testutil.Must(fs.Lookup(vfs.RootIno, "b")).Ino
			if got := testutil.Must(fs.Lookup(b, "f")).Nlink; got != 1 {
				t.Fatalf("b/f has %d links, want 1 (%s/%s/g is outside b)", got, mid, c.other)
			}
			testutil.Must(0, fs.Unlink(b, "f"))
			wantFsckClean(t, v)
		})
	}
}

// TestCloneKeepsLinksMaterializedInMiddle clones a lazy clone in which a
// hard-linked file got its own records (a write) while its other name is
// still pending in a stub directory: both names in the new clone must be
// one inode, counted twice, and a write through one shows through the
// other.
func TestCloneKeepsLinksMaterializedInMiddle(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	a := linkedThenCloned(t, v, "other", "g")
	af := testutil.Must(fs.Lookup(testutil.Must(fs.Lookup(a, "d")).Ino, "f")).Ino
	h := testutil.Must(fs.Open(af, syscall.O_RDWR))
	testutil.Must(fs.Write(h, 0, []byte("L")))
	testutil.Must(0, fs.Release(h))
	testutil.Must(fs.ClonePath("/a", "/b", namespace.CloneOptions{Lazy: true}))
	b := testutil.Must(fs.Lookup(vfs.RootIno, "b")).Ino
	bf := testutil.Must(fs.Lookup(testutil.Must(fs.Lookup(b, "d")).Ino, "f"))
	bg := testutil.Must(fs.Lookup(testutil.Must(fs.Lookup(b, "other")).Ino, "g"))
	if bf.Ino != bg.Ino || bf.Nlink != 2 {
		t.Fatalf("b/d/f is inode %d with %d links, b/other/g inode %d with %d: want one inode, 2 links", bf.Ino, bf.Nlink, bg.Ino, bg.Nlink)
	}
	h = testutil.Must(fs.Open(bf.Ino, syscall.O_RDWR))
	testutil.Must(fs.Write(h, 1, []byte("X")))
	testutil.Must(0, fs.Release(h))
	if got := readFile(t, fs, bg.Ino); string(got) != "LXnked" {
		t.Fatalf("b/other/g reads %q", got)
	}
	testutil.Must(0, fs.Unlink(testutil.Must(fs.Lookup(b, "d")).Ino, "f"))
	testutil.Must(0, fs.Unlink(testutil.Must(fs.Lookup(b, "other")).Ino, "g"))
	wantFsckClean(t, v)
}

// removeAll removes name from dir with everything below it, entry by
// entry (rmclone would free it in the background).
func removeAll(t *testing.T, fs *namespace.FS, dir uint64, name string) {
	t.Helper()
	a := testutil.Must(fs.Lookup(dir, name))
	if a.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		testutil.Must(0, fs.Unlink(dir, name))
		return
	}
	for _, e := range testutil.Must(fs.ReadDir(a.Ino)) {
		removeAll(t, fs, a.Ino, e.Name)
	}
	testutil.Must(0, fs.Rmdir(dir, name))
}

// TestCloneLinksThroughStubMovedBetweenClones moves a stub directory of
// one clone of a lazy clone into a sibling clone's tree, then clones that
// tree. The two clones hold two files: the moved directory's names must
// not be linked with (or counted for) the sibling's names of it. The new
// clone gives them inodes of their own (it cannot count names through
// another clone's chain); every count must be exact, so that removing
// every name leaves nothing behind.
func TestCloneLinksThroughStubMovedBetweenClones(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	top := testutil.Must(fs.Mkdir(root, vfs.RootIno, "t", 0o755)).Ino
	d := testutil.Must(fs.Mkdir(root, top, "d", 0o755)).Ino
	f := writeFile(t, fs, d, "f", []byte("linked"))
	testutil.Must(fs.Link(f, d, "g"))
	testutil.Must(fs.ClonePath("/t", "/m", namespace.CloneOptions{Lazy: true}))
	testutil.Must(fs.ClonePath("/m", "/x", namespace.CloneOptions{Lazy: true}))
	testutil.Must(fs.ClonePath("/m", "/y", namespace.CloneOptions{Lazy: true}))
	x := testutil.Must(fs.Lookup(vfs.RootIno, "x")).Ino
	y := testutil.Must(fs.Lookup(vfs.RootIno, "y")).Ino
	testutil.Must(0, fs.Rename(y, "d", x, "d2", 0)) // y's stub d, inside x
	testutil.Must(fs.ClonePath("/x", "/c", namespace.CloneOptions{Lazy: true}))
	c := testutil.Must(fs.Lookup(vfs.RootIno, "c")).Ino
	names := [][2]string{{"d", "f"}, {"d", "g"}, {"d2", "f"}, {"d2", "g"}}
	links := map[uint64]uint32{}
	seen := map[uint64]int{}
	var inos []uint64
	for _, p := range names {
		a := testutil.Must(fs.Lookup(testutil.Must(fs.Lookup(c, p[0])).Ino, p[1]))
		inos = append(inos, a.Ino)
		links[a.Ino] = a.Nlink
		seen[a.Ino]++
	}
	if inos[0] != inos[1] || inos[2] == inos[0] || inos[3] == inos[0] {
		t.Errorf("c's inodes for d/f d/g d2/f d2/g: %v: d's two names must be one file, d2's another", inos)
	}
	for ino, n := range seen {
		if links[ino] != uint32(n) {
			t.Errorf("inode %d has %d links, but %d names", ino, links[ino], n)
		}
	}
	for _, p := range names {
		testutil.Must(0, fs.Unlink(testutil.Must(fs.Lookup(c, p[0])).Ino, p[1]))
	}
	wantFsckClean(t, v)
}
