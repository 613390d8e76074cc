package pgstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/doppelfs/doppel/internal/meta/pgstore"
)

// A batch costs no round trip until Commit, and Commit costs one; an
// iterator fetches a small first page and larger ones after it, never the
// whole range at once.
func testRoundTrips(t *testing.T, e *env) {
	s, n, err := pgstore.OpenCounting(context.Background(), pgstore.Options{URL: e.dsn, Schema: e.schema(), Create: true})
	must(t, err)
	defer s.Close()
	const keys = 5000
	fill(t, s, keys)
	scan := func(steps int) int64 { // First, then steps Nexts
		t.Helper()
		it, err := s.NewIter([]byte("k"), []byte("l"))
		must(t, err)
		defer it.Close()
		ok := it.First()
		for range steps {
			ok = it.Next()
		}
		if !ok && steps < keys {
			t.Fatalf("iterator ended before %d steps", steps)
		}
		return 0
	}
	batch := func() {
		b := s.NewBatch()
		defer b.Close()
		for i := range 10 {
			must(t, b.Set(fmt.Appendf(nil, "b%02d", i), []byte("x")))
		}
		must(t, b.Commit(false))
	}
	// Warm up: each connection prepares a statement the first time.
	for range 3 {
		batch()
		scan(keys)
		s.Get([]byte("k00001"))
	}
	count := func(f func()) int64 { return fewestWrites(n.Load, f) }
	if got := count(batch); got != 1 {
		t.Errorf("a batch of 10 sets and its commit took %d round trips, want 1", got)
	}
	if got := count(func() { s.Get([]byte("k00001")) }); got != 0 {
		t.Errorf("a Get of a record this store wrote took %d round trips, want 0 (record cache)", got)
	}
	uncached, un, err := pgstore.OpenCounting(context.Background(), pgstore.Options{URL: e.dsn, Schema: s.Schema(), CacheBytes: -1})
	must(t, err)
	defer uncached.Close()
	uncached.Get([]byte("k00001"))
	if got := fewestWrites(un.Load, func() { uncached.Get([]byte("k00001")) }); got != 1 {
		t.Errorf("a Get without the record cache took %d round trips, want 1", got)
	}
	if got := count(func() { scan(pgstore.FirstPage - 1) }); got != 1 {
		t.Errorf("First and %d Nexts took %d round trips, want 1 page", pgstore.FirstPage-1, got)
	}
	if got := count(func() { scan(pgstore.FirstPage) }); got != 2 {
		t.Errorf("First and %d Nexts took %d round trips, want 2 pages", pgstore.FirstPage, got)
	}
	seekLT := func(at string, steps int) func() { // an extent scan's first steps
		return func() {
			it, err := s.NewIter([]byte("k"), []byte("l"))
			must(t, err)
			defer it.Close()
			ok := it.SeekLT([]byte(at))
			for range steps {
				ok = it.Next()
			}
			if !ok {
				t.Fatalf("SeekLT(%s) and %d Nexts ended early", at, steps)
			}
		}
	}
	for range 3 { // each connection prepares the statement first
		seekLT("k00100", 1)()
	}
	if got := count(seekLT("k00100", 2*pgstore.FirstPage-1)); got != 1 {
		t.Errorf("SeekLT and %d Nexts took %d round trips, want 1", 2*pgstore.FirstPage-1, got)
	}
	// Pages of 16, 32, ... 1024, then 1024 each: 5000 keys in 10 pages,
	// and an empty one that finds the end.
	if got := count(func() { scan(keys) }); got < 8 || got > 11 {
		t.Errorf("a scan of %d keys took %d round trips, want 8 to 11", keys, got)
	}
	t.Logf("scan of 100 keys: %d round trips", count(func() { scan(100) }))
}

// fewestWrites is the fewest round trips the counter (a store's writes
// to its connections) saw in three runs of f. It counts the session's
// heartbeat (every 2 s) too, which now and then fell into one run on a
// loaded machine (CI, 2026-12-02); the fewest is what f itself costs.
func fewestWrites(counter func() int64, f func()) int64 {
	least := int64(-1)
	for range 3 {
		before := counter()
		f()
		if got := counter() - before; least < 0 || got < least {
			least = got
		}
	}
	return least
}
