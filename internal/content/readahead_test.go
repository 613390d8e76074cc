package content

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// TestReadaheadFollowsSequentialReaders reads a file in 128 KiB steps and
// checks that the chunks ahead of the reader get prepared (their bytes
// prefetched, found by their extents' hints or their records): the window
// moves with the reader, not only at the start.
func TestReadaheadFollowsSequentialReaders(t *testing.T) {
	const step, size = 128 << 10, 16 << 20
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K"), CacheChunks: 1024, VerifyReads: true})
	data := testutil.RandBytes(rand.New(rand.NewPCG(9, 9)), size)
	v.writeBackwards(2, data, 64<<10)
	v.reopen() // empty caches
	rec := &prefetchRecorder{Store: v.e.blobs, fetched: map[blob.Loc]bool{}}
	v.e.blobs = rec
	prepared := func(off int64) bool {
		c, _, err := v.e.chunkRecord(schema.Sum(data[off : off+64<<10]))
		if err != nil {
			t.Fatal(err)
		}
		return rec.has(chunkLoc(c))
	}
	for off := int64(0); off < 6<<20; off += step {
		v.read(2, off, step)
	}
	// After reading 6 MiB sequentially, the next MiB must be prepared
	// without anyone asking for it.
	for off := int64(6 << 20); off < 7<<20; off += 64 << 10 {
		waitFor(t, fmt.Sprint("readahead of the chunk at ", off), func() bool { return prepared(off) })
	}
	// A random reader gets no readahead.
	v.e.loads.running.Wait()
	rec.reset()
	v.read(2, 12<<20, step)
	v.read(2, 1<<20, step)
	v.e.loads.running.Wait()
	if prepared(1<<20 + step + 64<<10) {
		t.Error("a jump started readahead")
	}
}

// writeBackwards writes data to ino one chunk at a time from its end, so
// that its chunks are stored in reverse file order. Readahead leaves data
// stored in order in segment files to the host (inorder.go); the tests
// that use this are about the readahead of data stored out of order, which
// every kind of store gets.
func (v *env) writeBackwards(ino uint64, data []byte, chunk int) {
	v.t.Helper()
	for off := len(data) - chunk; off >= 0; off -= chunk {
		v.write(ino, int64(off), data[off:off+chunk])
	}
}

// prefetchRecorder is a blob store that notes every location prefetched.
type prefetchRecorder struct {
	blob.Store
	mu      sync.Mutex
	fetched map[blob.Loc]bool
}

func (r *prefetchRecorder) Prefetch(locs []blob.Loc) {
	r.mu.Lock()
	for _, l := range locs {
		r.fetched[l] = true
	}
	r.mu.Unlock()
	r.Store.Prefetch(locs)
}

func (r *prefetchRecorder) has(l blob.Loc) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fetched[l]
}

func (r *prefetchRecorder) reset() {
	r.mu.Lock()
	clear(r.fetched)
	r.mu.Unlock()
}

// TestRandomReadersGetNoReadahead reads 4 KiB at random places of a
// 64 MiB file: nothing beyond what was read may be prepared, although
// some reads land within the readahead window of the one before.
func TestRandomReadersGetNoReadahead(t *testing.T) {
	const size = 64 << 20
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K"), CacheChunks: 4096, VerifyReads: true})
	v.write(2, 0, testutil.RandBytes(rand.New(rand.NewPCG(7, 7)), size))
	v.reopen()
	rng := rand.New(rand.NewPCG(8, 8))
	for range 300 {
		v.read(2, rng.Int64N(size/4096)*4096, 4096)
	}
	v.e.loads.running.Wait()
	if n := v.e.locs.c.Len(); n > 300 {
		t.Errorf("300 random reads left %d chunk locations cached: readahead ran for them", n)
	}
}

// TestReadsSurviveStaleLocations: a cached chunk record can go stale when
// the chunk is freed and stored again elsewhere; reads notice (the stale
// place fails the hash) and ask the store again.
func TestReadsSurviveStaleLocations(t *testing.T) {
	needSegmentFiles(t, "needs a freed chunk's old location to be unreadable; an S3 pack keeps the bytes of a dead span readable until the whole pack is deleted")
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), VerifyReads: true})
	v.e.hints = false // the reads must go by the chunk records (TestReadsPassOverStaleHints)
	data := testutil.RandBytes(rand.New(rand.NewPCG(10, 10)), 2*4096)
	v.write(2, 0, data)
	h := schema.Sum(data[:4096])
	v.e.lookupRecords([]schema.Hash{h})
	stale, ok := v.e.locs.c.Peek(h)
	if !ok {
		t.Fatal("lookupRecords did not cache the record")
	}
	// Free the chunk and punch it, then store the same bytes again: a
	// new location.
	v.do(func(tx *Tx) error {
		_, err := tx.Punch(2, 0, 4096)
		return err
	})
	v.e.reclaimer.reclaim(true)
	v.write(3, 0, data[:4096])
	for _, n := range []int{4096, 100} { // read straight into the buffer; through the cache
		v.e.locs.c.Add(h, stale)
		if got := v.read(3, 0, n); string(got) != string(data[:n]) {
			t.Fatalf("read of %d bytes through a stale cached location returned wrong data", n)
		}
		if c, _ := v.e.locs.c.Peek(h); c == stale {
			t.Fatalf("read of %d bytes kept the stale record cached", n)
		}
	}
}

// streamRecorder is a blob store that notes how far into its stream each
// PrefetchStream said the reader was.
type streamRecorder struct {
	blob.Store
	mu       sync.Mutex
	streamed []int64
}

func (r *streamRecorder) PrefetchStream(locs []blob.Loc, streamed int64) {
	r.mu.Lock()
	r.streamed = append(r.streamed, streamed)
	r.mu.Unlock()
	r.Store.Prefetch(locs)
}

func (r *streamRecorder) take() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.streamed
	r.streamed = nil
	return s
}

// TestReadaheadSaysHowFarTheStreamIs: stores that cache prefetched bytes
// learn how far the sequential reader has read since its stream began
// (the S3 store caches only a stream's head), counted afresh after a jump.
func TestReadaheadSaysHowFarTheStreamIs(t *testing.T) {
	const step, size = 128 << 10, 32 << 20
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K"), CacheChunks: 1024, VerifyReads: true})
	v.writeBackwards(2, testutil.RandBytes(rand.New(rand.NewPCG(10, 10)), size), 64<<10)
	v.reopen()
	rec := &streamRecorder{Store: v.e.blobs}
	v.e.blobs = rec
	window := v.e.loads.window
	check := func(from, to int64) {
		t.Helper()
		for off := from; off < to; off += step {
			v.read(2, off, step)
		}
		v.e.loads.running.Wait()
		got := rec.take()
		if len(got) == 0 {
			t.Fatalf("reading [%d, %d) prefetched nothing", from, to)
		}
		for _, s := range got {
			if s <= 0 || s > to-from+window {
				t.Errorf("reading [%d, %d): PrefetchStream said %d bytes streamed (window %d)", from, to, s, window)
			}
		}
		// The stream's latest PrefetchStream is the one that says the
		// most: two readaheads in flight may call in either order.
		if last := slices.Max(got); last < (to-from)/2 {
			t.Errorf("reading [%d, %d): the latest PrefetchStream said %d bytes streamed (all: %v)", from, to, last, got)
		}
	}
	check(0, 6<<20)
	check(20<<20, 26<<20) // a jump: a new stream
}

// gatedPrefetcher is a blob store whose prefetches wait at a gate (as
// slow lookups or a slow store would keep readahead busy) and then note
// what they were asked for.
type gatedPrefetcher struct {
	blob.Store
	gate    chan struct{}
	mu      sync.Mutex
	fetched map[blob.Loc]bool
}

func (g *gatedPrefetcher) Prefetch(locs []blob.Loc) {
	<-g.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, l := range locs {
		g.fetched[l] = true
	}
}

// TestReadaheadCatchesUpAfterFallingBehind: while every readahead slot
// is busy, a sequential reader's window does not move, so once readahead
// is free again the chunks just ahead of the reader are prefetched; a
// window moved without a slot would leave them to be read one by one.
func TestReadaheadCatchesUpAfterFallingBehind(t *testing.T) {
	const step, size = 128 << 10, 72 << 20
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K"), CacheChunks: 2048, VerifyReads: true})
	data := testutil.RandBytes(rand.New(rand.NewPCG(11, 11)), size)
	v.writeBackwards(2, data, 64<<10)
	v.reopen()
	g := &gatedPrefetcher{Store: v.e.blobs, gate: make(chan struct{}), fetched: map[blob.Loc]bool{}}
	v.e.blobs = g
	window := v.e.loads.window
	// Far enough for every slot to block and then some windows more.
	behind := int64(cap(v.e.loads.slots)+2) * window
	off := int64(0)
	for ; off < behind; off += step {
		v.read(2, off, step)
	}
	close(g.gate)
	v.e.loads.running.Wait()
	v.read(2, off, step)
	v.e.loads.running.Wait()
	for at := off + step; at < off+window/2; at += 64 << 10 {
		recs := v.e.lookupRecords([]schema.Hash{schema.Sum(data[at : at+64<<10])})
		if len(recs) != 1 {
			t.Fatalf("no record of the chunk at %d", at)
		}
		if !g.fetched[chunkLoc(recs[0])] {
			t.Fatalf("the chunk at %d, just ahead of a reader at %d, was not prefetched once readahead was free", at, off)
		}
	}
}
