package tests

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
	"golang.org/x/sys/unix"
)

// bigSource imports a tree of 3,000 small files in 30 directories, with
// hard links, symlinks and xattrs, into the volume as /src, and returns
// the host tree it came from: the reference of /src.
func bigSource(t *testing.T, v *volume) string {
	t.Helper()
	host := filepath.Join(realTempDir(t), "src")
	makeFiles(t, host, 30, 3000, 9)
	for i := range 30 {
		d := filepath.Join(host, fmt.Sprintf("d%02d", i))
		testutil.Check(t, os.Link(filepath.Join(d, fmt.Sprintf("f%05d", i)), filepath.Join(host, fmt.Sprintf("hard%02d", i))))
		testutil.Check(t, os.Symlink(fmt.Sprintf("../d%02d", (i+1)%30), filepath.Join(d, "next")))
		testutil.Check(t, unix.Setxattr(d, "user.dir", []byte(d), 0))
	}
	importOK(t, host, v.path("src"))
	return host
}

// TestCloneCrashMaterialize kills the daemon while it materializes a
// 3,000-file clone in the background, after changes on both sides: each
// time the volume mounts again and, once the kills are over, both trees
// equal their references, fsck is strict-clean, and the materialization
// resumes and completes.
func TestCloneCrashMaterialize(t *testing.T) {
	v := newVolume(t)
	host := bigSource(t, v)
	refClone := copyOut(t, host)
	src, big := v.path("src"), v.path("big")
	doppelOK(t, "clone", src, big)
	file := func(i int) string { return filepath.Join(fmt.Sprintf("d%02d", i%30), fmt.Sprintf("f%05d", i)) }
	for i := range 10 {
		for _, root := range []string{src, host} {
			writeFile(t, filepath.Join(root, file(i*7)), []byte(fmt.Sprintf("source change %d\n", i)))
		}
		for _, root := range []string{big, refClone} {
			writeFile(t, filepath.Join(root, file(i*7)+"-new"), []byte(fmt.Sprintf("clone change %d\n", i)))
			testutil.Check(t, os.Remove(filepath.Join(root, file(i*13+100))))
		}
	}
	kills := 0
	for ; kills < 2; kills++ {
		c, _ := cloneAt(v.clones(t, "--no-space"), "/big")
		if c.State != "materializing" {
			break
		}
		t.Logf("kill %d: %d inodes materialized, %d left", kills+1, c.Done, c.Stubs)
		killDaemonNow(t, v)
		v.mount(t)
	}
	if kills == 0 {
		t.Error("the clone was materialized before the first kill: the test did not crash anything")
	}
	check := func(when string) {
		t.Helper()
		t.Logf("comparing %s", when)
		compareDirs(t, host, src)
		compareDirs(t, refClone, big)
	}
	check("after the kills")
	v.umount(t)
	v.fsckStrict(t)
	v.mount(t)
	v.waitMaterialized(t)
	if c, _ := cloneAt(v.clones(t), "/big"); c.State != "materialized" || c.Stubs != 0 || c.PinHeld {
		t.Errorf("after the materialization the clone is listed as %+v", c)
	}
	check("after the materialization")
	v.umount(t)
	v.fsckStrict(t)
}

// TestCloneCrashRemove kills the daemon right after rmclone returns for a
// materialized 3,000-file clone, a lazy clone and a snapshot, each holding
// data of its own, while their trees are freed in the background: they
// stay gone, the source is intact, the freeing resumes at the next mount
// until the volume holds only the source's chunks, and fsck is
// strict-clean.
func TestCloneCrashRemove(t *testing.T) {
	v := newVolume(t)
	host := bigSource(t, v)
	src := v.path("src")
	names := []string{"c1", "c2", "c3"}
	doppelOK(t, "clone", src, v.path("c1"))
	writeFileSync(t, v.path("c1", "own"), testutil.SeededBytes(900, MiB))
	doppelOK(t, "clone", "--lazy", src, v.path("c2"))
	writeFileSync(t, v.path("c2", "own"), testutil.SeededBytes(901, MiB))
	writeFileSync(t, filepath.Join(src, "own"), testutil.SeededBytes(902, MiB))
	doppelOK(t, "snapshot", src, v.path("c3"))
	testutil.Check(t, os.Remove(filepath.Join(src, "own"))) // the snapshot's own now
	testutil.Check(t, os.Remove(filepath.Join(src, "d00", "f00000")))
	testutil.Check(t, os.Remove(filepath.Join(host, "d00", "f00000")))
	v.waitMaterialized(t)
	doppelOK(t, "rmclone", v.path("c1"), v.path("c2"), v.path("c3"))
	killDaemonNow(t, v)
	t.Logf("%d of the 3 removed clones were still being freed at the kill", removedTrees(t, v.Store))

	v.mount(t)
	for _, name := range names {
		if _, err := os.Lstat(v.path(name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after the crash, removed clone %s: %v; want it gone", name, err)
		}
	}
	compareDirs(t, host, src)
	v.waitSpaceOf(t, "src")
	if list := v.clones(t); len(list) != 0 {
		t.Errorf("removed clones are still listed: %+v", list)
	}
	v.umount(t)
	v.fsckStrict(t)
}

// removedTrees counts the removed clones of an unmounted store whose
// trees are not freed yet (their root inode still exists).
func removedTrees(t *testing.T, store string) int {
	n := 0
	readStoreMeta(t, store, func(m meta.Store) error {
		it, err := m.NewIter(schema.CloneRange())
		if err != nil {
			return err
		}
		defer it.Close()
		for it.First(); it.Valid(); it.Next() {
			rec, err := schema.DecodeClone(it.Value())
			if err != nil {
				return err
			}
			root, err := schema.CloneIno(it.Key())
			if err != nil {
				return err
			}
			if _, err := m.Get(schema.InodeKey(root)); rec.Removed && err == nil {
				n++
			}
		}
		return nil
	})
	return n
}
