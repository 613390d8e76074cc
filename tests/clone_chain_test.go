package tests

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestCloneOfClones clones clones (lazy ones and materialized ones, and a
// snapshot in between), changes every generation, and compares each with
// its own reference; then a chain of twelve clones, each adding a file.
func TestCloneOfClones(t *testing.T) {
	v := newVolume(t)
	src := v.path("src")
	testutil.Check(t, os.Mkdir(src, 0o755))
	buildTree(t, src)
	c1, c2, c3, s3 := v.path("c1"), v.path("c2"), v.path("c3"), v.path("s3")

	ref1 := copyOut(t, src)
	doppelOK(t, "clone", src, c1)
	mutateTree(t, c1)
	mutateTree(t, ref1)
	ref2 := copyOut(t, ref1)
	doppelOK(t, "clone", "--lazy", c1, c2)
	mutateClone(t, c2)
	mutateClone(t, ref2)
	refS3 := copyOut(t, ref2)
	ref3 := copyOut(t, ref2)
	doppelOK(t, "clone", c2, c3)
	doppelOK(t, "snapshot", c2, s3)
	for _, root := range []string{c3, ref3} {
		testutil.Check(t, os.RemoveAll(filepath.Join(root, "dir")))
		writeFile(t, filepath.Join(root, "size-1"), []byte("third generation\n"))
	}
	refSrc := copyOut(t, src)
	for _, root := range []string{src, refSrc} {
		writeFile(t, filepath.Join(root, "size-4097"), []byte("source, after all the clones\n"))
	}
	trees := map[string]string{src: refSrc, c1: ref1, c2: ref2, c3: ref3, s3: refS3}
	check := func() {
		t.Helper()
		for _, sut := range slices.Sorted(maps.Keys(trees)) {
			compareDirs(t, trees[sut], sut)
		}
	}
	check()
	v.remount(t)
	check()
	v.waitMaterialized(t)
	check()

	// Depth: each generation sees all the files of the ones before it,
	// and none of the ones after it.
	prev := src
	const depth = 12
	for i := 1; i <= depth; i++ {
		next := v.path(fmt.Sprintf("gen%02d", i))
		mode := "--lazy"
		if i%2 == 0 {
			mode = "--materialize"
		}
		doppelOK(t, "clone", mode, prev, next)
		writeFile(t, filepath.Join(next, fmt.Sprintf("gen%02d", i)), []byte(next))
		prev = next
	}
	for i := 1; i <= depth; i++ {
		dir := v.path(fmt.Sprintf("gen%02d", i))
		for j := 1; j <= depth; j++ {
			_, err := os.Lstat(filepath.Join(dir, fmt.Sprintf("gen%02d", j)))
			if (j <= i) != (err == nil) {
				t.Errorf("gen%02d/gen%02d: %v (it should exist: %v)", i, j, err, j <= i)
			}
		}
		compareDirs(t, filepath.Join(refSrc, "dir"), filepath.Join(dir, "dir")) // the source's part
	}
	v.umount(t)
	v.fsck(t)
}

// TestCloneSnapshot checks that a snapshot refuses every change with
// EROFS (rm -r included), shows the source as it was however the source
// changes, and that cloning it restores the source, writable.
func TestCloneSnapshot(t *testing.T) {
	v := newVolume(t)
	src, snap := v.path("src"), v.path("snap")
	testutil.Check(t, os.Mkdir(src, 0o755))
	buildTree(t, src)
	stampTimes(t, src)
	doppelOK(t, "snapshot", src, snap)
	compareMeta(t, src, snap)
	ref := copyOut(t, src)

	p := func(name string) string { return filepath.Join(snap, name) }
	refusals := map[string]error{
		"create":     writeFileErr(p("new"), []byte("x")),
		"write":      writeFileErr(p("size-1"), []byte("x")),
		"truncate":   os.Truncate(p("size-4096"), 1),
		"mkdir":      os.Mkdir(p("d"), 0o755),
		"unlink":     os.Remove(p("size-0")),
		"rmdir":      os.Remove(p("emptydir")),
		"rename":     os.Rename(p("size-0"), p("size-0b")),
		"rename out": os.Rename(p("size-0"), filepath.Join(src, "stolen")),
		"link":       os.Link(p("size-0"), p("size-0b")),
		"symlink":    os.Symlink("x", p("l")),
		"chmod":      os.Chmod(p("size-0"), 0o600),
		"setxattr":   unix.Setxattr(p("size-0"), "user.x", []byte("1"), 0),
		"utimes":     unix.UtimesNano(p("size-0"), []unix.Timespec{{Sec: 1}, {Sec: 1}}),
		"mkfifo":     unix.Mkfifo(p("fifo2"), 0o600),
	}
	for _, op := range slices.Sorted(maps.Keys(refusals)) {
		if err := refusals[op]; !errors.Is(err, unix.EROFS) {
			t.Errorf("%s in a snapshot: %v, want EROFS", op, err)
		}
	}
	if out, err := exec.Command("rm", "-rf", snap).CombinedOutput(); err == nil {
		t.Errorf("rm -rf of a snapshot succeeded:\n%s", out)
	}

	// The source moves on; the snapshot does not.
	mutateTree(t, src)
	testutil.Check(t, os.RemoveAll(filepath.Join(src, "dir")))
	compareDirs(t, ref, snap)

	// Cloning the snapshot back gives the source as it was, writable.
	restored := v.path("restored")
	doppelOK(t, "clone", snap, restored)
	compareMeta(t, ref, restored)
	compareDirs(t, ref, restored)
	writeFile(t, filepath.Join(restored, "size-1"), []byte("writable again\n"))
	compareDirs(t, ref, snap)
	v.remount(t)
	compareDirs(t, ref, snap)

	doppelOK(t, "rmclone", snap)
	if _, err := os.Lstat(snap); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after rmclone the snapshot is still there: %v", err)
	}
	v.umount(t)
	v.fsck(t)
}

// TestCloneInodesStable checks that the inode numbers of a clone's
// entries do not change when it is materialized (in the background or
// by a change), nor across unmount and mount.
func TestCloneInodesStable(t *testing.T) {
	v := newVolume(t)
	src := v.path("src")
	makeFiles(t, src, 5, 200, 2)
	testutil.Check(t, os.Link(filepath.Join(src, "d00", "f00000"), filepath.Join(src, "d01", "hard")))
	testutil.Check(t, os.Symlink("d00/f00000", filepath.Join(src, "sym")))
	doppelOK(t, "clone", "--lazy", src, v.path("lazy"))
	doppelOK(t, "clone", src, v.path("full"))
	doppelOK(t, "snapshot", src, v.path("snap"))
	doppelOK(t, "clone", "--lazy", v.path("lazy"), v.path("lazy2"))
	before := inodes(t, v.Mnt)

	same := func(when string) {
		t.Helper()
		after := inodes(t, v.Mnt)
		for p, ino := range before {
			if after[p] != ino {
				t.Errorf("%s: %s had inode %d, now %d", when, p, ino, after[p])
			}
		}
	}
	// A change materializes the lazy clone's path to the file.
	f, err := os.OpenFile(v.path("lazy", "d03", "f00003"), os.O_WRONLY|os.O_APPEND, 0)
	testutil.Check(t, err)
	_, err = f.Write([]byte("more"))
	testutil.Check(t, err)
	testutil.Check(t, f.Close())
	testutil.Check(t, os.Chmod(v.path("lazy2", "d01", "hard"), 0o600))
	same("after changes in lazy clones")
	v.waitMaterialized(t)
	same("after the background materialization")
	v.remount(t)
	same("after a remount")
	if a, b := before["full/d00/f00000"], before["full/d01/hard"]; a != b {
		t.Errorf("hard links of the clone have inodes %d and %d", a, b)
	}
}

// TestCloneLazyHardLinks checks hard links in a lazy clone, whose
// directories get their own entries only when first used: a file with
// three names in SRC has three names in the clone from the start (st_nlink
// included, which tar and rsync -H rely on), a name outside SRC or
// excluded does not count, and a write through one name shows through the
// others even after that name is removed.
func TestCloneLazyHardLinks(t *testing.T) {
	v := newVolume(t)
	src, dst := v.path("src"), v.path("dst")
	testutil.Check(t, os.MkdirAll(filepath.Join(src, "d", "e"), 0o755))
	testutil.Check(t, os.MkdirAll(filepath.Join(src, "ex"), 0o755))
	writeFile(t, filepath.Join(src, "a"), []byte("orig\n"))
	testutil.Check(t, os.Link(filepath.Join(src, "a"), filepath.Join(src, "d", "b")))
	testutil.Check(t, os.Link(filepath.Join(src, "a"), filepath.Join(src, "d", "e", "c")))
	writeFile(t, filepath.Join(src, "x"), []byte("linked outside\n"))
	testutil.Check(t, os.Link(filepath.Join(src, "x"), v.path("outside")))
	writeFile(t, filepath.Join(src, "w"), []byte("linked into an excluded directory\n"))
	testutil.Check(t, os.Link(filepath.Join(src, "w"), filepath.Join(src, "ex", "z")))
	doppelOK(t, "clone", "--lazy", "--exclude", "ex", src, dst)

	for name, want := range map[string]uint64{"a": 3, "x": 1, "w": 1} {
		if st := lstat(t, filepath.Join(dst, name)); uint64(st.Nlink) != want {
			t.Errorf("%s in a fresh lazy clone has st_nlink %d, want %d", name, st.Nlink, want)
		}
	}
	writeFile(t, filepath.Join(dst, "a"), []byte("new\n"))
	testutil.Check(t, os.Remove(filepath.Join(dst, "a")))
	checkFile(t, filepath.Join(dst, "d", "b"), []byte("new\n"))
	checkFile(t, filepath.Join(dst, "d", "e", "c"), []byte("new\n"))
	if a, b := inodeOf(t, filepath.Join(dst, "d", "b")), inodeOf(t, filepath.Join(dst, "d", "e", "c")); a != b {
		t.Errorf("the clone's d/b and d/e/c are inodes %d and %d, not one file", a, b)
	}
	if st := lstat(t, filepath.Join(dst, "d", "b")); st.Nlink != 2 {
		t.Errorf("after removing one of three names, st_nlink is %d, want 2", st.Nlink)
	}
	checkFile(t, filepath.Join(src, "d", "b"), []byte("orig\n"))
	if st := lstat(t, filepath.Join(src, "a")); st.Nlink != 3 {
		t.Errorf("the source's file has st_nlink %d after changes in its clone, want 3", st.Nlink)
	}
	v.umount(t)
	v.fsckStrict(t)
}
