package s3store

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// Chunks read once are read again from the cache: with the server
// stopped, rereads still return the right bytes, also after a reopen;
// without a cache they fail.
func TestCacheServesRereads(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "cache")
	s := mustOpen(t, cfg)
	r := rand.New(rand.NewPCG(1, 1))
	locs, data := putSynced(t, s, r, 30)
	checkAll(t, s, locs, data) // from S3, into the cache
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, cfg)
	defer s.Close()
	nocfg := cfg
	nocfg.Dir, nocfg.CacheBytes = t.TempDir(), -1
	uncached := mustOpen(t, nocfg)
	defer uncached.Close()

	srv.Stop()
	checkAll(t, s, locs, data)
	if _, err := uncached.Read(locs[0], nil); err == nil {
		t.Fatal("read without a cache succeeded while the server was stopped")
	}
	srv.Restart(t)
}

// A damaged cache file is a miss: the read returns the bytes from S3 and
// the file is dropped.
func TestCacheDamagedFileIsMiss(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "damaged")
	s := mustOpen(t, cfg)
	defer s.Close()
	r := rand.New(rand.NewPCG(2, 2))
	locs, data := putSynced(t, s, r, 5)
	checkAll(t, s, locs, data)
	before := s.cache.recordOf(t, locs[2])
	s.cache.damage(t, locs[2], int64(locs[2].Length)/2)
	checkAll(t, s, locs, data)
	if s.cache.has(locs[2]) {
		// Read again from S3 and put back: as a new record.
		if after := s.cache.recordOf(t, locs[2]); after == before {
			t.Fatal("damaged record kept")
		}
	}
}

// recordOf returns the record indexed for l.
func (c *cache) recordOf(t *testing.T, l blob.Loc) *record {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.entries[l]
	if r == nil {
		t.Fatalf("no record of %+v", l)
	}
	return r
}

// damage flips a bit of the byte at off in the cached bytes of range l.
func (c *cache) damage(t *testing.T, l blob.Loc, off int64) {
	t.Helper()
	r := c.recordOf(t, l)
	c.mu.Lock()
	f := c.slabs[r.pos.slab].f
	c.mu.Unlock()
	b := make([]byte, 1)
	at := r.pos.off + headerSize + off
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

// The cache never holds more than its limit; a chunk read again and again
// stays while one read once is overwritten (promotion), and the index
// survives a reopen.
func TestCacheBounded(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "bounded")
	cfg.CacheBytes = 200 << 10
	s := mustOpen(t, cfg)
	r := rand.New(rand.NewPCG(3, 3))
	locs, data := putSynced(t, s, r, 40) // about 800 KiB
	checkAll(t, s, locs[:1], data[:1])
	for i := 1; i < len(locs); i++ {
		checkAll(t, s, locs[i:i+1], data[i:i+1])
		checkAll(t, s, locs[:1], data[:1]) // keep the first one recent
		if n := dirBytes(t, s.cache.dir); n > cfg.CacheBytes || s.cache.bytes() > n {
			t.Fatalf("after %d reads: %d bytes of files, index says %d, limit %d", i, n, s.cache.bytes(), cfg.CacheBytes)
		}
	}
	if !s.cache.has(locs[0]) {
		t.Error("the chunk read again and again was overwritten")
	}
	if s.cache.has(locs[1]) {
		t.Error("a chunk read once long ago was kept")
	}
	s.cache.writing.Wait() // a promotion the last read started
	want := s.cache.bytes()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, cfg)
	defer s.Close()
	if got := s.cache.bytes(); got != want || !s.cache.has(locs[0]) {
		t.Fatalf("reopened cache: %d bytes (was %d), first chunk cached %v", got, want, s.cache.has(locs[0]))
	}
}

// Prefetched chunks are in the cache: with the server stopped they read.
func TestPrefetchFillsCache(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "prefetch")
	s := mustOpen(t, cfg)
	defer s.Close()
	r := rand.New(rand.NewPCG(4, 4))
	locs, data := putSynced(t, s, r, 20)
	for len(locs) > 0 { // Prefetch drops what exceeds its concurrency
		s.Prefetch(locs)
		s.prefetching.Wait()
		var missing []int
		for i, l := range locs {
			if !s.cache.has(l) {
				missing = append(missing, i)
			}
		}
		if len(missing) == len(locs) {
			t.Fatal("prefetch cached nothing")
		}
		srv.Stop()
		for i := range locs {
			if !s.cache.has(locs[i]) {
				continue
			}
			checkAll(t, s, locs[i:i+1], data[i:i+1])
		}
		srv.Restart(t)
		var l2 = locs[:0:0]
		var d2 = data[:0:0]
		for _, i := range missing {
			l2, d2 = append(l2, locs[i]), append(d2, data[i])
		}
		locs, data = l2, d2
	}
}

func dirBytes(t testing.TB, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		st, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		n += st.Size()
	}
	return n
}

// A hit on a record the head will soon overwrite copies the blocks it
// read to the head, once: they are then read from their new place and
// outlive the old one; the record's other blocks do not.
func TestCachePromotesWhatIsReadAgain(t *testing.T) {
	c, err := openCache(t.TempDir(), 1<<20) // four slabs of 256 KiB
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	r := rand.New(rand.NewPCG(6, 6))
	put := func(l blob.Loc) []byte {
		data := make([]byte, l.Length)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		c.put(l, data)
		c.writing.Wait()
		return data
	}
	read := func(l blob.Loc, want []byte) {
		t.Helper()
		buf := make([]byte, l.Length)
		if !c.get(l, buf) {
			t.Fatalf("%+v: not in the cache", l)
		}
		if !bytes.Equal(buf, want) {
			t.Fatalf("%+v: wrong bytes", l)
		}
		c.writing.Wait()
	}
	big := blob.Loc{Segment: 1, Length: 200 << 10}
	data := put(big)
	first := c.recordOf(t, big)
	hot := blob.Loc{Segment: 1, Offset: 70 << 10, Length: 4 << 10} // in big's second block
	cold := blob.Loc{Segment: 1, Offset: 150 << 10, Length: 4 << 10}
	filler := uint32(2)
	fill := func(until func() bool) {
		for !until() {
			put(blob.Loc{Segment: filler, Length: 60 << 10})
			filler++
		}
	}
	fill(func() bool { return c.ahead(first.pos) < c.limit/2 }) // the head comes near big
	read(hot, data[hot.Offset:][:hot.Length])
	c.mu.Lock()
	moved := c.covering(hot)
	c.mu.Unlock()
	if moved == first || moved.loc != (blob.Loc{Segment: 1, Offset: 64 << 10, Length: 64 << 10}) {
		t.Fatalf("read near the head's reach, %+v is held by %+v, want its block promoted", hot, moved.loc)
	}
	read(hot, data[hot.Offset:][:hot.Length]) // from its new place: nothing to promote
	c.mu.Lock()
	again := c.covering(hot)
	c.mu.Unlock()
	if again != moved {
		t.Fatal("a block promoted just now was promoted again")
	}
	fill(func() bool { return !c.has(cold) }) // past big's place, not yet the promoted block's
	read(hot, data[hot.Offset:][:hot.Length])
}

// A read that found its record in the index and then lost the race with
// the head (which laid another record of the same size at the same place
// before the read got to the disk) fails its check: the blocks' sums are
// bound to the record they were written for, so the other record's bytes
// and sums do not pass for it.
func TestCacheReadOfOverwrittenRecordMisses(t *testing.T) {
	c, err := openCache(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	r := rand.New(rand.NewPCG(8, 8))
	put := func(l blob.Loc) {
		rb := recordBuf(int(l.Length))
		copy(rb.data, testutil.RandBytes(r, int(l.Length)))
		c.putRecord(l, rb)
	}
	first := blob.Loc{Segment: 1, Length: 4096}
	put(first)
	c.mu.Lock()
	old := c.covering(first)
	sl := c.slabs[old.pos.slab]
	c.mu.Unlock()
	for n := uint32(2); ; n++ { // records of the same size until one lands where first was
		put(blob.Loc{Segment: n, Length: 4096})
		c.mu.Lock()
		landed := c.entries[blob.Loc{Segment: n, Length: 4096}]
		c.mu.Unlock()
		if landed != nil && landed.pos == old.pos {
			break
		}
	}
	if c.readSpan(sl, old, 0, make([]byte, first.Length)) {
		t.Fatal("the bytes of the record written over it passed the check of the record read")
	}
}
