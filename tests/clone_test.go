package tests

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestCloneTree clones a tree holding every kind of entry, lazily and
// materialized, and checks through the kernel that the clone looks
// exactly like the source did (owners, times and device numbers, then
// contents, modes, xattrs, symlinks and hard-link groups), that no inode
// is shared with the source, and that both sides then change
// independently, across a remount and the background materialization.
func TestCloneTree(t *testing.T) {
	v := newVolume(t)
	src := v.path("src")
	testutil.Check(t, os.Mkdir(src, 0o755))
	buildTree(t, src)
	if os.Geteuid() == 0 {
		testutil.Check(t, unix.Mknod(filepath.Join(src, "null"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))))
		testutil.Check(t, os.Lchown(filepath.Join(src, "size-1"), 1234, 5678))
		testutil.Check(t, os.Lchown(filepath.Join(src, "dir"), 42, 43))
		testutil.Check(t, os.Lchown(filepath.Join(src, "link-rel"), 7, 8))
	}
	stampTimes(t, src)

	dsts := map[string]string{"--lazy": v.path("lazy"), "--materialize": v.path("full")}
	for _, mode := range []string{"--lazy", "--materialize"} {
		dst := dsts[mode]
		doppelOK(t, "clone", mode, src, dst)
		compareMeta(t, src, dst) // before anything reads the files
		compareDirs(t, src, dst)
		notLinked(t, src, dst)
	}
	refSrc, refLazy, refFull := copyOut(t, src), copyOut(t, src), copyOut(t, src)

	mutateTree(t, src)
	mutateTree(t, refSrc)
	mutateClone(t, dsts["--lazy"])
	mutateClone(t, refLazy)
	mutateClone(t, dsts["--materialize"])
	mutateClone(t, refFull)
	check := func(when string) {
		t.Helper()
		t.Logf("comparing %s", when)
		compareDirs(t, refSrc, src)
		compareDirs(t, refLazy, dsts["--lazy"])
		compareDirs(t, refFull, dsts["--materialize"])
	}
	check("after changing both sides")
	v.remount(t)
	check("after a remount")
	v.waitMaterialized(t)
	check("after the background materialization")

	// A single file clones too, as a file.
	doppelOK(t, "clone", filepath.Join(src, "size-65535"), v.path("one"))
	checkFile(t, v.path("one"), testutil.SeededBytes(105, 65535))
	writeFile(t, v.path("one"), []byte("changed"))
	checkFile(t, filepath.Join(src, "size-65535"), testutil.SeededBytes(105, 65535))
	v.umount(t)
	v.fsck(t)
}

// notLinked requires that no entry of dst shares an inode with src.
func notLinked(t *testing.T, src, dst string) {
	t.Helper()
	srcInos := map[uint64]string{}
	for p, ino := range inodes(t, src) {
		srcInos[ino] = p
	}
	for p, ino := range inodes(t, dst) {
		if s, ok := srcInos[ino]; ok {
			t.Errorf("clone's %s has inode %d, like the source's %s", p, ino, s)
		}
	}
}

// mutateClone changes a tree buildTree made in other ways than
// mutateTree: through a hard link, renames across directories, a new
// link, a retargeted symlink, a shrunk sparse file, an xattr, a delete.
func mutateClone(t *testing.T, root string) {
	p := func(name string) string { return filepath.Join(root, name) }
	writeFile(t, p("dir/hard"), []byte("written through the other name\n"))
	testutil.Check(t, os.Chmod(p("size-0"), 0o600))
	testutil.Check(t, os.Rename(p("dir/sub"), p("sub-moved")))
	testutil.Check(t, os.Remove(p("link-rel")))
	testutil.Check(t, os.Symlink("size-4096", p("link-rel")))
	testutil.Check(t, os.Truncate(p("holey"), 5000))
	writeFile(t, p("dir/new"), testutil.SeededBytes(400, 70000))
	testutil.Check(t, os.Link(p("size-4095"), p("sub-moved/hard2")))
	testutil.Check(t, unix.Setxattr(p("size-65535"), "user.new", []byte("v"), 0))
	testutil.Check(t, os.Remove(p("fifo")))
}

// TestCloneExcludes checks the gitignore-style patterns of --exclude and
// --exclude-from: a bare name at any depth with everything below it, a
// path anchored at SRC, a directory-only pattern, "**", and a file of
// patterns with comments and blank lines.
func TestCloneExcludes(t *testing.T) {
	v := newVolume(t)
	src := v.path("src")
	kept := []string{
		"a/keep", "sub/build/out/o.bin", "y/cache", "docs/readme.txt",
		"other/docs/c.pdf", "sub/vendor/v", "top.txt",
	}
	excluded := []string{
		"secret", "a/secret/x", "build/out/o.bin", "cache/c", "x/cache/c",
		"docs/a.pdf", "docs/p/q/b.pdf", "vendor/v", "logs/1.log", "logs/deep/2.log",
	}
	for _, p := range append(slices.Clone(kept), excluded...) {
		testutil.Check(t, os.MkdirAll(filepath.Dir(filepath.Join(src, p)), 0o755))
		writeFile(t, filepath.Join(src, p), []byte(p+"\n"))
	}
	patterns := filepath.Join(realTempDir(t), "patterns")
	writeFile(t, patterns, []byte("# logs and vendored code\n\n*.log\n/vendor\n"))
	args := []string{"--exclude", "secret", "--exclude", "build/out", "--exclude", "cache/",
		"--exclude", "docs/**/*.pdf", "--exclude-from", patterns}

	// The directories that hold kept files remain, and so do the ones
	// whose only content was excluded but that are not matched themselves.
	want := []string{"a", "docs", "logs", "logs/deep", "other", "other/docs", "sub", "sub/build",
		"sub/build/out", "sub/vendor", "x", "y", "build", "docs/p", "docs/p/q"}
	want = append(want, kept...)
	slices.Sort(want)
	for _, mode := range []string{"--lazy", "--materialize"} {
		dst := v.path("clone" + mode)
		doppelOK(t, append(append([]string{"clone", mode}, args...), src, dst)...)
		if got := relPaths(t, dst); !slices.Equal(got, want) {
			t.Errorf("clone %s with exclusions holds\n  %q\nwant\n  %q", mode, got, want)
		}
		// Exclusions are not differences.
		if out := doppelOK(t, "diff", src, dst); out != "" {
			t.Errorf("doppel diff of a tree and its clone with exclusions:\n%s", out)
		}
		// An excluded name can be made anew in the clone alone.
		writeFile(t, filepath.Join(dst, "secret"), []byte("the clone's own\n"))
		checkFile(t, filepath.Join(src, "secret"), []byte("secret\n"))
	}
	v.waitMaterialized(t)
	withSecret := append(slices.Clone(want), "secret")
	slices.Sort(withSecret)
	if got := relPaths(t, v.path("clone--materialize")); !slices.Equal(got, withSecret) {
		t.Errorf("after materialization the clone holds %q", got)
	}
	for _, p := range excluded {
		if _, err := os.Lstat(filepath.Join(src, p)); err != nil {
			t.Errorf("source lost excluded %s: %v", p, err)
		}
	}
}

// TestCloneIsolation changes both sides of a clone through the kernel,
// including through files that were open at the instant of the clone:
// writes through a descriptor opened in SRC before the clone never reach
// DST, which shows exactly the data written before it.
func TestCloneIsolation(t *testing.T) {
	v := newVolume(t)
	src, dst := v.path("src"), v.path("dst")
	makeFiles(t, src, 4, 40, 1)
	openPath := filepath.Join(src, "open.txt")
	w, err := os.OpenFile(openPath, os.O_CREATE|os.O_RDWR, 0o644)
	testutil.Check(t, err)
	defer w.Close()
	_, err = w.Write([]byte("before\n")) // buffered in the daemon, not closed
	testutil.Check(t, err)
	sharedPath := filepath.Join(src, "d00", "f00000")
	shared, err := os.ReadFile(sharedPath)
	testutil.Check(t, err)
	r, err := os.OpenFile(sharedPath, os.O_RDWR, 0)
	testutil.Check(t, err)
	defer r.Close()
	refSrc, refDst := copyOut(t, src), copyOut(t, src)

	doppelOK(t, "clone", src, dst)
	_, err = w.Write([]byte("after\n"))
	testutil.Check(t, err)
	_, err = w.WriteAt([]byte("B"), 0)
	testutil.Check(t, err)
	checkFile(t, filepath.Join(dst, "open.txt"), []byte("before\n"))
	dw, err := os.OpenFile(filepath.Join(dst, "open.txt"), os.O_RDWR|os.O_APPEND, 0)
	testutil.Check(t, err)
	_, err = dw.Write([]byte("clone\n"))
	testutil.Check(t, err)
	testutil.Check(t, dw.Close())
	checkFile(t, openPath, []byte("Before\nafter\n"))
	checkFile(t, filepath.Join(dst, "open.txt"), []byte("before\nclone\n"))

	// The clone's copy of a file open in SRC changes; the descriptor
	// still reads SRC's file, and its writes stay there.
	writeFile(t, filepath.Join(dst, "d00", "f00000"), []byte("changed in the clone\n"))
	got := make([]byte, len(shared))
	if _, err := r.ReadAt(got, 0); err != nil || string(got) != string(shared) {
		t.Errorf("a descriptor opened in SRC before the clone reads %q (%v) after a write in DST", got, err)
	}
	_, err = r.WriteAt([]byte("SRC"), 0)
	testutil.Check(t, err)
	testutil.Check(t, os.Remove(sharedPath)) // and unlinked while open
	_, err = r.WriteAt([]byte("still open"), 3)
	testutil.Check(t, err)
	testutil.Check(t, r.Close())
	checkFile(t, filepath.Join(dst, "d00", "f00000"), []byte("changed in the clone\n"))
	testutil.Check(t, w.Close())
	writeFile(t, filepath.Join(refSrc, "open.txt"), []byte("Before\nafter\n"))
	writeFile(t, filepath.Join(refDst, "open.txt"), []byte("before\nclone\n"))
	testutil.Check(t, os.Remove(filepath.Join(refSrc, "d00", "f00000")))
	writeFile(t, filepath.Join(refDst, "d00", "f00000"), []byte("changed in the clone\n"))

	// Structural changes on either side.
	both := func(fn func(root string), roots ...string) {
		for _, root := range roots {
			fn(root)
		}
	}
	both(func(root string) {
		testutil.Check(t, os.Rename(filepath.Join(root, "d01"), filepath.Join(root, "d02", "moved")))
		writeFile(t, filepath.Join(root, "d03", "new"), []byte("src only\n"))
		testutil.Check(t, unix.Setxattr(filepath.Join(root, "d03"), "user.side", []byte("src"), 0))
	}, src, refSrc)
	both(func(root string) {
		testutil.Check(t, os.RemoveAll(filepath.Join(root, "d02")))
		testutil.Check(t, os.Link(filepath.Join(root, "d03", "f00003"), filepath.Join(root, "linked")))
		testutil.Check(t, os.Truncate(filepath.Join(root, "d03", "f00007"), 3))
	}, dst, refDst)
	for _, when := range []string{"after changes on both sides", "after a remount"} {
		if strings.HasPrefix(when, "after a remount") {
			v.remount(t)
		}
		compareDirs(t, refSrc, src)
		compareDirs(t, refDst, dst)
	}
	v.umount(t)
	v.fsck(t)
}
