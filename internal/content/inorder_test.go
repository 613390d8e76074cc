package content

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/testutil"
)

// TestStoredInOrderTellsLayouts: endsInOrder sees data written front to
// back as stored in order, and not data written back to front, a window
// whose last chunk was overwritten later (stored far beyond the rest), or
// extents without location hints; a window without extents is empty.
func TestStoredInOrderTellsLayouts(t *testing.T) {
	needSegmentFiles(t, "readahead is left to the host only for chunks in segment files")
	const size, window = 16 << 20, 1 << 20
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K"), VerifyReads: true})
	rng := rand.New(rand.NewPCG(12, 12))
	v.write(2, 0, testutil.RandBytes(rng, size))
	v.writeBackwards(3, testutil.RandBytes(rng, size), 64<<10)
	v.write(4, 0, testutil.RandBytes(rng, size))
	v.write(4, window-64<<10, testutil.RandBytes(rng, 64<<10))
	v.e.hints = false
	v.write(5, 0, testutil.RandBytes(rng, size))
	v.e.hints = true

	for _, c := range []struct {
		what          string
		ino           uint64
		from, to      int64
		inOrder, void bool
	}{
		{"written front to back, first window", 2, 0, window, true, false},
		{"written front to back, a window inside", 2, 5 << 20, 5<<20 + window, true, false},
		{"written front to back, a window past the end", 2, size - window/2, size + window, true, false},
		{"written back to front", 3, 0, window, false, false},
		{"last chunk of the window overwritten", 4, 0, window, false, false},
		{"the window after it", 4, window, 2 * window, true, false},
		{"no hints", 5, 0, window, false, false},
		{"no extents", 6, 0, window, false, true},
	} {
		first, last, empty, err := windowEnds(v.meta, c.ino, c.from, c.to)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if inOrder := !empty && endsInOrder(first, last); inOrder != c.inOrder || empty != c.void {
			t.Errorf("%s: in order %v, empty %v; want %v, %v", c.what, inOrder, empty, c.inOrder, c.void)
		}
	}
}

// TestReadaheadLeavesDataInOrderToTheHost: a sequential reader of a file
// written front to back gets no prefetches (the host's readahead on the
// segment file serves it), while the same reads of a file stored back to
// front do (TestReadaheadFollowsSequentialReaders checks which chunks).
func TestReadaheadLeavesDataInOrderToTheHost(t *testing.T) {
	needSegmentFiles(t, "data in S3 is always read ahead by the engine")
	const step, size = 128 << 10, 16 << 20
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K"), CacheChunks: 1024, VerifyReads: true})
	rng := rand.New(rand.NewPCG(13, 13))
	v.write(2, 0, testutil.RandBytes(rng, size))
	v.writeBackwards(3, testutil.RandBytes(rng, size), 64<<10)
	v.reopen()
	rec := &prefetchRecorder{Store: v.e.blobs, fetched: map[blob.Loc]bool{}}
	v.e.blobs = rec
	readAll := func(ino uint64) int { return v.readCountingPrefetches(rec, ino, size, step) }
	if n := readAll(2); n != 0 {
		t.Errorf("reading a file stored in order prefetched %d chunks", n)
	}
	if n := readAll(3); n == 0 {
		t.Error("reading a file stored back to front prefetched nothing")
	}
}

// TestReadaheadSkipsDataInMemory: a sequential reader of a file stored
// out of order, whose pages the host keeps (KeepHostCache, a block
// export), gets prefetches while the store says its bytes are on the disk
// only, and none once it says they are in the host's page cache
// (blob.ResidencyProber). The store's answers are the test's: the host's
// page cache is not the test's to control (with the file's pages dropped
// by POSIX_FADV_DONTNEED and the host asked, the test failed now and then
// in CI, on a loaded host), and blob's TestInMemoryFollowsThePageCache
// checks the segment files' own probe.
func TestReadaheadSkipsDataInMemory(t *testing.T) {
	needSegmentFiles(t, "readahead asks whether bytes are in memory only of chunks in segment files")
	const step, size = 128 << 10, 16 << 20
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K"), CacheChunks: 1, VerifyReads: true})
	v.writeBackwards(2, testutil.RandBytes(rand.New(rand.NewPCG(14, 14)), size), 64<<10)
	v.reopen()
	pieces, err := Extents(v.meta, 2, 0, size)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pieces {
		if _, ok := v.e.hintedLoc(p); !ok {
			t.Fatalf("the extent at %d has no location hint", p.Off)
		}
	}
	defer v.e.KeepHostCache(2)()
	residency := &toldResidency{}
	rec := &probingRecorder{&prefetchRecorder{Store: v.e.blobs, fetched: map[blob.Loc]bool{}}, residency}
	v.e.blobs = rec
	readAll := func() int { return v.readCountingPrefetches(rec.prefetchRecorder, 2, size, step) }
	if n := readAll(); n == 0 {
		t.Error("reading a file stored back to front from the disk prefetched nothing")
	}
	if residency.asked.Load() == 0 {
		t.Error("readahead never asked the store whether the bytes are in memory")
	}
	residency.inMemory.Store(true)
	if n := readAll(); n != 0 {
		t.Errorf("reading it again, from memory, prefetched %d chunks", n)
	}
}

// toldResidency is a blob.ResidencyProber that answers what it is told.
type toldResidency struct {
	inMemory atomic.Bool
	asked    atomic.Int64
}

func (r *toldResidency) InMemory(blob.Loc) bool {
	r.asked.Add(1)
	return r.inMemory.Load()
}

// probingRecorder is a prefetchRecorder that answers residency probes.
type probingRecorder struct {
	*prefetchRecorder
	blob.ResidencyProber
}

// readCountingPrefetches reads ino's first size bytes step bytes at a
// time and returns how many chunks rec saw prefetched since it was last
// asked. It waits for the readahead a read started before the next read:
// a readahead goroutine that a loaded host runs late, after the reads
// passed its window, finds the window's ends read already and rightly
// prefetches nothing (seen with the goroutine delayed 50 ms), and these
// tests judge what readahead decides, not when it runs.
func (v *env) readCountingPrefetches(rec *prefetchRecorder, ino uint64, size, step int64) int {
	v.t.Helper()
	for off := int64(0); off < size; off += step {
		v.read(ino, off, int(step))
		v.e.loads.running.Wait()
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	n := len(rec.fetched)
	clear(rec.fetched)
	return n
}
