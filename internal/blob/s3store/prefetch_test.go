package s3store

import (
	"bytes"
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// Prefetched ranges are served from memory, without the disk cache: with
// the cache disabled and the server stopped, every prefetched chunk
// reads; a chunk read once is let go (its range read through), so a
// second read needs the server.
func TestPrefetchServesFromMemory(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "staged")
	cfg.CacheBytes = -1
	s := mustOpen(t, cfg)
	defer s.Close()
	r := rand.New(rand.NewPCG(5, 5))
	locs, data := putSynced(t, s, r, 20)
	s.Prefetch(locs)
	s.prefetching.Wait()
	srv.Stop()
	defer srv.Restart(t)
	checkAll(t, s, locs, data)
	if _, err := s.Read(locs[0], nil); err == nil {
		t.Fatal("a chunk read through was still served from memory")
	}
	if n := s.staged.held(); n != 0 {
		t.Fatalf("%d bytes still staged after every chunk was read", n)
	}
}

// Prefetching never holds more than PrefetchBytes: what does not fit is
// left for the reads, which still return the right bytes; ranges whose
// GET ended make room for new ones.
func TestPrefetchBounded(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "budget")
	cfg.PrefetchBytes = 300 << 10 // one pack's range (256 KiB) fits, two do not
	s := mustOpen(t, cfg)
	defer s.Close()
	r := rand.New(rand.NewPCG(6, 6))
	locs, data := putSynced(t, s, r, 60) // about 1.2 MiB in 5 packs
	staged := false
	for i := 0; i < len(locs); i += 10 {
		s.Prefetch(locs[i:])
		n := s.staged.held()
		if n > cfg.PrefetchBytes {
			t.Fatalf("%d bytes staged, budget %d", n, cfg.PrefetchBytes)
		}
		staged = staged || n > 0
		checkAll(t, s, locs[i:i+10], data[i:i+10])
	}
	if !staged {
		t.Fatal("nothing was prefetched")
	}
	s.prefetching.Wait()
	if n := s.staged.held(); n > cfg.PrefetchBytes {
		t.Fatalf("%d bytes staged, budget %d", n, cfg.PrefetchBytes)
	}
}

// A prefetched range is one cache file whose blocks are checked
// separately: damage in one block is a miss for the chunks in that block
// only until the range is dropped, and the reads still return the right
// bytes from S3.
func TestCacheRangeBlocks(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "ranges")
	s := mustOpen(t, cfg)
	defer s.Close()
	r := rand.New(rand.NewPCG(7, 7))
	locs, data := putSynced(t, s, r, 12) // in one or two packs
	s.Prefetch(locs)
	s.prefetching.Wait()
	s.staged.dropAll()
	s.cache.mu.Lock()
	var ranges []blob.Loc
	for l := range s.cache.entries {
		ranges = append(ranges, l)
	}
	s.cache.mu.Unlock()
	if len(ranges) == 0 || len(ranges) >= len(locs) {
		t.Fatalf("%d cache files for %d prefetched chunks; want one range per pack", len(ranges), len(locs))
	}
	// The longest range holds several chunks: once damaged, its chunks
	// are cached again each on its own, and it is gone.
	slices.SortFunc(ranges, func(a, b blob.Loc) int { return cmp.Compare(b.Length, a.Length) })
	srv.Stop()
	checkAll(t, s, locs, data) // all from the cache files
	srv.Restart(t)
	s.cache.damage(t, ranges[0], int64(ranges[0].Length)/2)
	checkAll(t, s, locs, data) // the damaged block is a miss: from S3
	s.cache.mu.Lock()
	_, kept := s.cache.entries[ranges[0]]
	s.cache.mu.Unlock()
	if kept {
		t.Fatalf("the damaged range %+v is still indexed", ranges[0])
	}
}

// held is the bytes prefetching holds.
func (st *staging) held() int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.bytes
}

// dropAll unstages every fetch, so that reads go to the cache.
func (st *staging) dropAll() {
	st.mu.Lock()
	defer st.mu.Unlock()
	for len(st.order) > 0 {
		st.unstage(st.order[0])
	}
}

// A sequential reader's ranges are written to the read cache while it is
// within the first quarter of the cache's size, and only served from
// memory past it (a long scan would replace the whole cache, itself
// included); plain Prefetch caches what it fetches.
func TestPrefetchStreamCachesOnlyTheHead(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "scan")
	cfg.CacheBytes = 64 << 20
	s := mustOpen(t, cfg)
	defer s.Close()
	r := rand.New(rand.NewPCG(7, 7))
	locs, data := putSynced(t, s, r, 60)
	head, tail := locs[:30], locs[30:]
	s.Prefetch(head[:10])
	s.PrefetchStream(head[10:], s.scanCached())
	s.PrefetchStream(tail, s.scanCached()+1)
	s.prefetching.Wait()
	// The head's last range goes on to its pack's end (a stream's next
	// chunks): tail chunks in a pack of the head may be cached with it.
	headPacks := map[uint32]bool{}
	for _, l := range head {
		headPacks[l.Segment] = true
	}
	for i, l := range locs {
		if cached := s.cache.has(l); cached != (i < len(head)) && !headPacks[l.Segment] {
			t.Errorf("chunk %d of %d (head: %d): cached %v", i, len(locs), len(head), cached)
		}
	}
	checkAll(t, s, locs, data) // the tail from memory
	if n := s.staged.held(); n != 0 {
		t.Fatalf("%d bytes still staged after every chunk was read", n)
	}
}

// A stream's last range in a pack goes on to the pack's end: with the
// server stopped, the pack's later chunks read from memory, and the range
// is let go once they all were read. A plain Prefetch fetches only what
// it was asked for.
func TestStreamFetchGoesOnToThePackEnd(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "packend")
	cfg.CacheBytes = -1
	s := mustOpen(t, cfg)
	defer s.Close()
	r := rand.New(rand.NewPCG(8, 8))
	locs, data := putSynced(t, s, r, 40)
	n := 0 // chunks of the first pack
	for n < len(locs) && locs[n].Segment == locs[0].Segment {
		n++
	}
	if n < 3 {
		t.Fatalf("the first pack holds %d chunks; the test needs 3", n)
	}
	s.Prefetch(locs[:1])
	s.prefetching.Wait()
	srv.Stop()
	checkAll(t, s, locs[:1], data[:1])
	if _, err := s.Read(locs[1], nil); err == nil {
		t.Fatal("a plain prefetch fetched past what it was asked for")
	}
	srv.Restart(t)

	s.PrefetchStream(locs[n-3:n-2], 1)
	s.prefetching.Wait()
	srv.Stop()
	defer srv.Restart(t)
	checkAll(t, s, locs[n-3:n], data[n-3:n])
	if held := s.staged.held(); held != 0 {
		t.Fatalf("%d bytes still staged after the pack's last chunk was read", held)
	}
}

// A read of a staged fetch's chunk takes its bytes as soon as they have
// arrived, not once the whole range has: the first chunks of a long
// prefetch are read while the rest is still coming. A chunk the GET
// failed before reaching is not read from it.
func TestStagedReadTakesBytesAsTheyArrive(t *testing.T) {
	const half = 32 << 10
	st := newStaging(1 << 20)
	f := &fetch{num: 1, start: 0, end: 3 * half,
		wanted: map[uint64]bool{0: true, half: true, 2 * half: true}, taken: map[uint64]bool{}}
	if !st.add(f, f.end) {
		t.Fatal("no room")
	}
	st.mu.Lock()
	f.rb = recordBuf(3 * half)
	st.mu.Unlock()
	arrive := func(n uint64, ended bool) {
		st.mu.Lock()
		f.filled, f.ended = n, ended
		st.mu.Unlock()
		st.arrive.Broadcast()
	}
	want := testutil.RandBytes(rand.New(rand.NewPCG(5, 5)), 3*half)
	copy(f.rb.data[:half], want[:half])
	arrive(half, false)

	read := func(off uint64) (chan bool, []byte) {
		buf := make([]byte, half)
		got := make(chan bool, 1)
		go func() { got <- st.read(blob.Loc{Segment: 1, Offset: off, Length: half}, buf) }()
		return got, buf
	}
	got, buf := read(0)
	select {
	case ok := <-got:
		if !ok || !bytes.Equal(buf, want[:half]) {
			t.Fatalf("first chunk: ok %v, bytes equal %v", ok, bytes.Equal(buf, want[:half]))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a read of bytes that arrived waits for the rest of the range")
	}
	got, buf = read(half)
	select {
	case <-got:
		t.Fatal("a read returned before its bytes arrived")
	case <-time.After(50 * time.Millisecond):
	}
	copy(f.rb.data[half:2*half], want[half:2*half])
	arrive(2*half, false)
	if ok := <-got; !ok || !bytes.Equal(buf, want[half:2*half]) {
		t.Fatalf("second chunk: ok %v", ok)
	}
	got, _ = read(2 * half)
	arrive(2*half, true) // the GET failed before the third chunk
	if ok := <-got; ok {
		t.Fatal("a chunk the GET never delivered was read from it")
	}
}
