package s3store

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

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
	locs, data := putSome(t, s, r, 30)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
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
	locs, data := putSome(t, s, r, 5)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	checkAll(t, s, locs, data)
	path := s.cache.path(locs[2])
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	checkAll(t, s, locs, data)
	if s.cache.has(locs[2]) {
		// Read again from S3 and put back: its file must be whole again.
		if b2, err := os.ReadFile(path); err != nil || string(b2) == string(b) {
			t.Fatalf("damaged cache file kept (%v)", err)
		}
	}
}

// The cache never holds more than its limit, evicting the least recently
// used chunk first, and its index survives a reopen.
func TestCacheBounded(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "bounded")
	cfg.CacheBytes = 200 << 10
	s := mustOpen(t, cfg)
	r := rand.New(rand.NewPCG(3, 3))
	locs, data := putSome(t, s, r, 40) // about 800 KiB
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	checkAll(t, s, locs[:1], data[:1])
	for i := 1; i < len(locs); i++ {
		checkAll(t, s, locs[i:i+1], data[i:i+1])
		checkAll(t, s, locs[:1], data[:1]) // keep the first one recent
		if n := dirBytes(t, s.cache.dir); n > cfg.CacheBytes || s.cache.bytes() != n {
			t.Fatalf("after %d reads: %d bytes of files, index says %d, limit %d", i, n, s.cache.bytes(), cfg.CacheBytes)
		}
	}
	if !s.cache.has(locs[0]) {
		t.Error("the most recently used chunk was evicted")
	}
	if s.cache.has(locs[1]) {
		t.Error("the least recently used chunk was kept")
	}
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
	locs, data := putSome(t, s, r, 20)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
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
