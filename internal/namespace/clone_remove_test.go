package namespace_test

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
)

// TestRemoveCloneWhileMaterializing removes a clone after the
// materializer has copied its tree and before it lets the clone go, then
// closes the volume at once (an unmount or a crash stops the reaper).
// The removed tree must stay marked for the reaper, which frees it after
// the reopen: the materializer dropping the clone's record under the
// reaper's feet left it unreachable for good (found by TestCloneCrashLoop
// on PostgreSQL + S3).
func TestRemoveCloneWhileMaterializing(t *testing.T) {
	v, dir := openVolume(t)
	fs := v.NS
	makeSource(t, fs, 8)
	var once sync.Once
	removed := make(chan error, 1)
	namespace.OnMaterialized(t, func(uint64) {
		once.Do(func() { removed <- fs.RemoveClone("/c") })
	})
	testutil.Must(fs.ClonePath("/src", "/c", namespace.CloneOptions{}))
	c := testutil.Must(fs.Lookup(vfs.RootIno, "c")).Ino
	if err := <-removed; err != nil {
		t.Fatal(err)
	}
	v = reopen(t, v, dir)
	wantFsckClean(t, v)
	waitReaped(t, v.NS, c)
	wantFsckClean(t, v)
}

// TestReaperRootMaterializedMeanwhile removes a lazy clone and, after the
// reaper has found its root a stub without entries and before the
// transaction that deletes the root, materializes the root (as a
// materializer's walk that began before the rmclone does). The root's
// new entries must be freed before it: deleting the root regardless left
// its entries and their files unreachable (fsck dirent-not-in-dir; found
// by TestCloneCrashLoop on PostgreSQL + S3).
func TestReaperRootMaterializedMeanwhile(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	makeSource(t, fs, 8)
	var once sync.Once
	materialized := make(chan error, 1)
	namespace.OnReap(t, func(r uint64, n int) {
		if n == 0 {
			once.Do(func() { materialized <- fs.MaterializeNow(r) })
		}
	})
	testutil.Must(fs.ClonePath("/src", "/c", namespace.CloneOptions{Lazy: true}))
	c := testutil.Must(fs.Lookup(vfs.RootIno, "c")).Ino
	if err := fs.RemoveClone("/c"); err != nil {
		t.Fatal(err)
	}
	awaitHook(t, materialized, "the reaper did not reach the removed clone's root")
	waitReaped(t, fs, c)
	wantFsckClean(t, v)
}

// TestReaperEntryRenamedMeanwhile removes a clone whose root has entries
// and, after the reaper has listed them and before the transaction that
// frees them, renames one and puts a new file under its old name (a
// process still working in the removed tree). The reaper must free what
// the entries name when it frees them, not what they named when it
// listed them: the tree goes whole and fsck stays clean.
func TestReaperEntryRenamedMeanwhile(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	makeSource(t, fs, 4)
	testutil.Must(fs.ClonePath("/src", "/c", namespace.CloneOptions{Lazy: true}))
	c := testutil.Must(fs.Lookup(vfs.RootIno, "c")).Ino
	testutil.Must(fs.ReadDir(c)) // the root gets its entries
	var once sync.Once
	changed := make(chan error, 1)
	namespace.OnReap(t, func(r uint64, n int) {
		if n == 0 {
			return
		}
		once.Do(func() { // on the reaper's goroutine: errors go back, no t.Fatal
			err := fs.Rename(c, "f00", c, "g00", 0)
			if err == nil {
				var h vfs.Handle
				if _, h, err = fs.Create(root, c, "f00", 0o644, syscall.O_WRONLY); err == nil {
					err = fs.Release(h)
				}
			}
			changed <- err
		})
	})
	if err := fs.RemoveClone("/c"); err != nil {
		t.Fatal(err)
	}
	awaitHook(t, changed, "the reaper did not list the removed clone's entries")
	waitReaped(t, fs, c)
	wantFsckClean(t, v)
}

// waitReaped waits until the reaper has deleted the removed clone's root
// c, for at most 20 s.
func waitReaped(t *testing.T, fs *namespace.FS, c uint64) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := fs.GetAttr(c)
		if errors.Is(err, syscall.ENOENT) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the removed clone's root %d is still there 20 s on (getattr: %v)", c, err)
		}
	}
}

// makeSource makes directory /src with n small files.
func makeSource(t *testing.T, fs *namespace.FS, n int) {
	t.Helper()
	src := testutil.Must(fs.Mkdir(root, vfs.RootIno, "src", 0o755)).Ino
	for i := range n {
		writeFile(t, fs, src, fmt.Sprintf("f%02d", i), []byte(fmt.Sprint("file ", i)))
	}
}

// awaitHook waits up to a minute for what a hook did on a background
// goroutine, and fails the test with its error or with late.
func awaitHook(t *testing.T, done <-chan error, late string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal(late + " within a minute")
	}
}
