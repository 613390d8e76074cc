package content

import (
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/testutil"
)

// forgetCounter is a blob store that counts the locations it is told to
// forget.
type forgetCounter struct {
	blob.Store
	forgotten atomic.Int64
}

func (f *forgetCounter) Forget(locs []blob.Loc) {
	f.forgotten.Add(int64(len(locs)))
	f.Store.Forget(locs)
}

// TestStreamingReadsForgetUnlessKept reads a file from start to end in
// 128 KiB steps, as a FUSE reader streams it: the host is told to forget
// the segment bytes read (the kernel caches them above doppel), except
// while the file is kept (KeepHostCache, a block export), and again
// after the keeper let go.
func TestStreamingReadsForgetUnlessKept(t *testing.T) {
	needSegmentFiles(t, "Forget drops segment files' pages")
	const step, size = 128 << 10, 3 * DefaultReadahead
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K"), VerifyReads: true})
	v.write(2, 0, testutil.RandBytes(rand.New(rand.NewPCG(5, 5)), size))
	counter := &forgetCounter{Store: v.blobs}
	v.e.Close()
	e, err := New(v.meta, counter, v.cfg, slog.New(slog.DiscardHandler))
	testutil.Check(t, err)
	v.e = e
	stream := func() int64 {
		before := counter.forgotten.Load()
		for off := int64(0); off < size; off += step {
			v.read(2, off, step)
		}
		v.e.loads.running.Wait()
		return counter.forgotten.Load() - before
	}
	if n := stream(); n == 0 {
		t.Fatal("a streaming read forgot nothing: the test no longer sees what it checks")
	}
	release := v.e.KeepHostCache(2)
	if n := stream(); n != 0 {
		t.Errorf("a streaming read of a kept file forgot %d locations", n)
	}
	release()
	release() // a second call does nothing
	if n := stream(); n == 0 {
		t.Error("after the release a streaming read forgot nothing")
	}
}
