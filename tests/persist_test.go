package tests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestPersistence builds the same tree on the host and in a volume, then
// checks the volume still matches after remounting, twice: once for the
// initial tree and once after modifying it. Some data is deliberately not
// fsynced: doppel umount must flush it.
func TestPersistence(t *testing.T) {
	v := newVolume(t)
	host := realTempDir(t)
	mnt := v.path("p") // a subdirectory: the volume root may hold doppel's own entries
	for _, root := range []string{host, mnt} {
		if err := os.Mkdir(root, 0o755); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		if err := os.Chmod(root, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	compare := func(when string) {
		t.Helper()
		ref, err := snapshotTree(host)
		if err != nil {
			t.Fatal(err)
		}
		got, err := snapshotTree(mnt)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if d := diffTrees(ref, got); len(d) > 0 {
			t.Fatalf("%s: volume differs from the host copy (ref=host, sut=volume):\n  %s", when, strings.Join(d, "\n  "))
		}
	}
	remount := func(when string) {
		t.Helper()
		before := v.df(t)
		v.remount(t)
		after := v.df(t)
		if before.LogicalBytes != after.LogicalBytes || before.PhysicalBytes != after.PhysicalBytes || before.Chunks != after.Chunks {
			t.Errorf("%s: df changed across remount: %v -> %v", when, before.Raw, after.Raw)
		}
		compare(when)
	}

	buildTree(t, host)
	buildTree(t, mnt)
	compare("after building")
	remount("after the first remount")

	mutateTree(t, host)
	mutateTree(t, mnt)
	compare("after modifying")
	remount("after the second remount")
}

// buildTree creates files of awkward sizes, holes, repeated content,
// links, xattrs and modes under root.
func buildTree(t *testing.T, root string) {
	p := func(name string) string { return filepath.Join(root, name) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, size := range []int{0, 1, 4095, 4096, 4097, 65535, MiB + 7, 5 * MiB} {
		must(os.WriteFile(p("size-"+strconv.Itoa(size)), testutil.SeededBytes(uint64(100+i), size), 0o644))
	}
	motif := testutil.SeededBytes(200, 300<<10)
	must(os.WriteFile(p("motif-twice"), concat(motif, motif), 0o644))

	f, err := os.Create(p("holey"))
	must(err)
	_, err = f.WriteAt(testutil.SeededBytes(201, 4096), 0)
	must(err)
	_, err = f.WriteAt(testutil.SeededBytes(202, 4096), 3*MiB+123)
	must(err)
	must(f.Close())

	must(os.MkdirAll(p("dir/sub"), 0o755))
	must(os.Mkdir(p("emptydir"), 0o700))
	must(os.WriteFile(p("dir/sub/deep"), []byte("deep\n"), 0o640))
	must(os.Symlink("size-1", p("link-rel")))
	must(os.Symlink("nowhere", p("link-dangling")))
	must(os.Symlink("../size-1", p("dir/link-up")))
	must(os.Link(p("size-1"), p("dir/hard")))
	must(unix.Mkfifo(p("fifo"), 0o600))
	must(unix.Setxattr(p("size-1"), "user.color", []byte("blue"), 0))
	must(unix.Setxattr(p("dir"), "user.kind", []byte("directory"), 0))
	must(os.Chmod(p("size-4095"), 0o600))
	must(os.Chmod(p("dir/sub"), 0o700))

	f, err = os.OpenFile(p("size-5242880"), os.O_WRONLY, 0)
	must(err)
	_, err = f.WriteAt([]byte(strings.Repeat("x", 100)), 2*MiB)
	must(err)
	must(f.Close())
	must(os.Truncate(p("size-1048583"), 700000))
	must(os.WriteFile(p("tmp"), []byte("renamed\n"), 0o644))
	must(os.Rename(p("tmp"), p("renamed")))
	must(os.WriteFile(p("deleted"), []byte("gone\n"), 0o644))
	must(os.Remove(p("deleted")))
	// Written and closed, never fsynced.
	must(os.WriteFile(p("unsynced"), testutil.SeededBytes(203, 3*MiB+5), 0o644))
}

// mutateTree changes the tree buildTree made in every way persistence
// could get wrong: overwrites, shrinking, holes, deletes, renames, xattrs.
func mutateTree(t *testing.T, root string) {
	p := func(name string) string { return filepath.Join(root, name) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(p("size-1"), []byte("Z"), 0o644))
	must(os.Truncate(p("size-4096"), 10))
	must(os.Remove(p("dir/sub/deep")))
	must(os.Rename(p("renamed"), p("dir/renamed2")))
	must(unix.Removexattr(p("size-1"), "user.color"))
	must(unix.Setxattr(p("dir/hard"), "user.other", []byte{0, 1, 2}, 0))

	f, err := os.OpenFile(p("size-5242880"), os.O_WRONLY|os.O_APPEND, 0)
	must(err)
	_, err = f.Write(testutil.SeededBytes(300, 12345))
	must(err)
	must(unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, MiB, MiB))
	must(f.Close())
	must(os.WriteFile(p("unsynced"), testutil.SeededBytes(301, 100), 0o644))
}
