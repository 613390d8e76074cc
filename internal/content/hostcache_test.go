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

// cachedPutCounter is a blob store that counts the batches written
// through the host's page cache (StartPutManyCached) and around it.
type cachedPutCounter struct {
	blob.Store
	cached, other atomic.Int64
}

func (c *cachedPutCounter) StartPutMany(data [][]byte) (*blob.Writing, error) {
	c.other.Add(1)
	return c.Store.StartPutMany(data)
}

func (c *cachedPutCounter) StartPutManyCached(data [][]byte) (*blob.Writing, error) {
	c.cached.Add(1)
	return c.Store.(blob.CachedPutter).StartPutManyCached(data)
}

// TestKeptFilesWriteThroughTheHostCache: the chunks of a file whose host
// page cache is kept (a block export's) are written through it, where
// other files' large writes go around it.
func TestKeptFilesWriteThroughTheHostCache(t *testing.T) {
	needSegmentFiles(t, "only segment files are written around the page cache")
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), VerifyReads: true})
	counter := &cachedPutCounter{Store: v.blobs}
	v.e.blobs = counter
	rng := rand.New(rand.NewPCG(6, 6))
	write := func(ino uint64) []byte {
		data := testutil.RandBytes(rng, 1<<20)
		ps, _ := Cut(v.e.chunk, 0, data, true)
		v.e.MarkHostCached(ino, ps)
		testutil.Check(t, v.e.CommitChunks(ps, nil, func(tx *Tx) error { _, err := tx.WriteChunks(ino, ps); return err }))
		return data
	}
	write(2)
	if counter.cached.Load() != 0 || counter.other.Load() == 0 {
		t.Fatalf("a file not kept: %d cached writes, %d others; want none, some", counter.cached.Load(), counter.other.Load())
	}
	release := v.e.KeepHostCache(3)
	defer release()
	before := counter.other.Load()
	data := write(3)
	if counter.cached.Load() == 0 || counter.other.Load() != before {
		t.Fatalf("a kept file: %d cached writes, %d others; want some, none", counter.cached.Load(), counter.other.Load()-before)
	}
	v.checkContent(3, data)
}
