package fsck_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

// openBusy reopens the volume with background commits of small runs and
// frequent flushes, so that transactions, frees and punches happen all
// the time.
func (e *env) openBusy() {
	testutil.Check(e.t, e.v.Close())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.v = testutil.Must(volume.OpenWith(e.dir, log, namespace.Options{StreamFlush: 64 << 10, FlushInterval: 5 * time.Millisecond}))
	v := e.v
	e.t.Cleanup(func() { v.Close() })
}

// writers keeps n goroutines creating, overwriting, copying, renaming and
// deleting files until stop is called, which returns the first failure.
// ops counts the operations done.
func (e *env) writers(n int, ops *atomic.Int64) (stop func() error) {
	var quit atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range n {
		dir := testutil.Must(e.v.NS.Mkdir(caller, vfs.RootIno, fmt.Sprintf("w%d", w), 0o755)).Ino
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := writeLoop(e.v.NS, dir, uint64(w), &quit, ops); err != nil {
				errs <- fmt.Errorf("writer %d: %w", w, err)
			}
		}()
	}
	return func() error {
		quit.Store(true)
		wg.Wait()
		close(errs)
		return <-errs
	}
}

func writeLoop(fs *namespace.FS, dir, seed uint64, quit *atomic.Bool, ops *atomic.Int64) error {
	r := rand.New(rand.NewPCG(seed, 1))
	var names []string
	for i := 0; !quit.Load(); i++ {
		ops.Add(1)
		var err error
		switch op := r.IntN(10); {
		case op < 5 || len(names) < 3: // new file; some contents repeat (dedup)
			name := fmt.Sprintf("f%d", i)
			var h vfs.Handle
			if _, h, err = fs.Create(caller, dir, name, 0o644, syscall.O_RDWR); err == nil {
				_, err = fs.Write(h, 0, testutil.SeededBytes(uint64(r.IntN(6)), 1+r.IntN(300<<10)))
				if err == nil && r.IntN(4) == 0 {
					_, err = fs.Write(h, int64(r.IntN(100<<10)), testutil.SeededBytes(uint64(i), 1+r.IntN(20<<10)))
				}
				err = errors.Join(err, fs.Release(h))
				names = append(names, name)
			}
		case op < 8: // delete one, or truncate it
			j := r.IntN(len(names))
			if r.IntN(2) == 0 {
				err = fs.Unlink(dir, names[j])
				names = append(names[:j], names[j+1:]...)
			} else {
				ino := testutil.Must(fs.Lookup(dir, names[j])).Ino
				_, err = fs.SetAttr(caller, ino, vfs.SetAttr{SetSize: true, Size: int64(r.IntN(50 << 10))})
			}
		case op < 9: // rename over another
			j, k := r.IntN(len(names)), r.IntN(len(names))
			if j != k {
				err = fs.Rename(dir, names[j], dir, names[k], 0)
				names = append(names[:j], names[j+1:]...)
			}
		default: // share extents with copy_file_range
			src := testutil.Must(fs.Open(testutil.Must(fs.Lookup(dir, names[r.IntN(len(names))])).Ino, syscall.O_RDONLY))
			_, dst, cerr := fs.Create(caller, dir, fmt.Sprintf("c%d", i), 0o644, syscall.O_WRONLY)
			if err = cerr; err == nil {
				_, err = fs.CopyFileRange(src, int64(r.IntN(4096)), dst, 0, 200<<10)
				err = errors.Join(err, fs.Release(dst))
				names = append(names, fmt.Sprintf("c%d", i))
			}
			err = errors.Join(err, fs.Release(src))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// TestCheckLiveDuringWrites checks a volume again and again while writers
// change it (until they did 600 operations): every check must find
// nothing at all.
func TestCheckLiveDuringWrites(t *testing.T) {
	e := newEnv(t, volume.InitOptions{})
	e.openBusy()
	var ops atomic.Int64
	stop := e.writers(3, &ops)
	checks := 0
	for ; checks < 6 || ops.Load() < 600; checks++ {
		r, err := fsck.CheckLive(context.Background(), e.v.FsckStores(), e.v.Engine, fsck.Options{VerifyData: checks%2 == 0})
		if err != nil {
			stop()
			t.Fatal(err)
		}
		if len(r.Problems) != 0 || !r.Online {
			stop()
			for _, p := range r.Problems {
				t.Errorf("%s %s", p.Severity, p)
			}
			t.Fatalf("online check %d found %d problems while writers ran", checks, len(r.Problems))
		}
	}
	testutil.Check(t, stop())
	t.Logf("%d online checks during %d operations", checks, ops.Load())
	e.reopen()
	if r := e.check(true); len(r.Problems) != 0 {
		t.Fatalf("offline check after the writers: %v", r.Kinds())
	}
}

// TestRepairLive repairs a refcount and orphan space of an earlier session
// while writers run, and refuses to touch what needs an offline repair.
func TestRepairLive(t *testing.T) {
	e := newEnv(t, volume.InitOptions{})
	e.openBusy()
	h, c := e.chunkOf("/solo")
	c.Refs += 2
	e.commit(schema.ChunkKey(h), c.Encode())
	e.appendGarbage(10000)
	e.setInode("/d/b", func(n *schema.Inode) { n.Mapped++ }) // offline only
	before := e.contents()

	var ops atomic.Int64
	stop := e.writers(2, &ops)
	rr, err := fsck.RepairLive(context.Background(), e.v.FsckStores(), e.v.Engine, fsck.Options{})
	testutil.Check(t, errors.Join(err, stop()))
	for _, r := range rr.Repairs {
		t.Logf("repaired %s %q: %s", r.Kind, r.Path, r.Action)
	}
	kinds := rr.After.Kinds()
	if len(kinds) != 1 || kinds[0] != fsck.KindMapped || rr.NeedOffline != 1 || rr.After.ReclaimableBytes != 0 {
		t.Fatalf("after an online repair: kinds %v, %d left for offline, %d reclaimable bytes", kinds, rr.NeedOffline, rr.After.ReclaimableBytes)
	}
	rr = e.repair(true)
	if !rr.After.Clean() || len(rr.After.Problems) != 0 {
		t.Fatalf("offline repair left %v", rr.After.Kinds())
	}
	e.checkData(before, nil, repairCase{})
}
