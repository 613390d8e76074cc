package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/meta/storetest"
	"github.com/jackc/pgx/v5"
)

// DeleteRange hides the range from the batch at once, a later Set inside
// it survives, an earlier one does not, and the commit deletes the range
// in the store (an open upper bound too).
func testDeleteRange(t *testing.T, e *env) {
	s := e.open(t)
	fill(t, s, 100)
	b := s.NewBatch()
	defer b.Close()
	must(t, b.Set([]byte("k00020x"), []byte("dropped"))) // written before the range deletion
	rd := b.(meta.RangeDeleter)
	must(t, rd.DeleteRange([]byte("k00010"), []byte("k00090")))
	must(t, b.Set([]byte("k00050"), []byte("again")))
	must(t, rd.DeleteRange([]byte("k00095"), nil))
	must(t, b.Set([]byte("zz"), []byte("after"))) // past the open range, written after it
	want := []string{}
	for i := range 10 {
		want = append(want, fmt.Sprintf("k%05d", i))
	}
	want = append(want, "k00050")
	for i := 90; i < 95; i++ {
		want = append(want, fmt.Sprintf("k%05d", i))
	}
	want = append(want, "zz")
	for _, r := range []meta.Reader{b, nil} {
		if r == nil {
			must(t, b.Commit(false))
			r = s
		}
		if got := storetest.Keys(t, r, "", "", false); !slices.Equal(got, want) {
			t.Fatalf("keys %q\nwant %q", got, want)
		}
		back := slices.Clone(want)
		slices.Reverse(back)
		if got := storetest.Keys(t, r, "", "", true); !slices.Equal(got, back) {
			t.Fatalf("keys backward %q", got)
		}
		storetest.WantMissing(t, r, "k00020x")
		storetest.WantMissing(t, r, "k00030")
		storetest.WantValue(t, r, "k00050", "again")
		storetest.WantValue(t, r, "zz", "after")
	}
}

// A commit one of whose statements fails (a key too long for the index)
// leaves nothing of the others, and the batch can be closed.
func testFailedCommitLeavesNothing(t *testing.T, e *env) {
	s := e.open(t)
	fill(t, s, 10)
	b := s.NewBatch()
	must(t, b.(meta.RangeDeleter).DeleteRange([]byte("k00000"), []byte("k00005")))
	must(t, b.Delete([]byte("k00007")))
	must(t, b.Set([]byte("new"), []byte("n")))
	long := make([]byte, 8000) // past a B-tree entry's limit, incompressible
	rand.NewChaCha8([32]byte{1}).Read(long)
	must(t, b.Set(append([]byte("zz"), long...), []byte("v")))
	if err := b.Commit(false); err == nil {
		t.Fatal("commit of an oversized key succeeded")
	}
	must(t, b.Close())
	if got := storetest.Keys(t, s, "", "", false); len(got) != 10 || got[0] != "k00000" {
		t.Fatalf("after the failed commit the store holds %q", got)
	}
	storetest.WantValue(t, s, "k00007", "v7")
	storetest.WantMissing(t, s, "new")
}

// Commits writing the same keys from several goroutines, in orders of
// their own, all succeed (conflicts are retried, never returned), and
// each lands whole: the keys end up with one writer's values.
func testOverlappingConcurrentCommits(t *testing.T, e *env) {
	s := e.open(t)
	const workers, rounds, keys = 4, 40, 20
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range rounds {
				b := s.NewBatch()
				val := fmt.Appendf(nil, "w%d.%d", w, i)
				for _, k := range r.Perm(keys) {
					if err := b.Set(fmt.Appendf(nil, "hot%02d", k), val); err != nil {
						t.Error(err)
					}
				}
				if err := b.Commit(false); err != nil {
					t.Error(err)
				}
				b.Close()
			}
		})
	}
	wg.Wait()
	first, err := s.Get([]byte("hot00"))
	must(t, err)
	for k := range keys {
		storetest.WantValue(t, s, fmt.Sprintf("hot%02d", k), string(first))
	}
	if want := fmt.Sprintf(".%d", rounds-1); !strings.HasSuffix(string(first), want) {
		t.Errorf("last value %q is not a last round's", first)
	}
	t.Logf("commits retried after a conflict: %d", s.Retries())
}

// A snapshot's iterator reads many pages, each at the snapshot's instant,
// while commits rewrite and delete the range between its pages.
func testSnapshotAcrossPages(t *testing.T, e *env) {
	s := e.open(t)
	const n = 3000
	fill(t, s, n)
	snap := s.Snapshot()
	defer snap.Close()
	it, err := snap.NewIter([]byte("k"), []byte("l"))
	must(t, err)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if want := fmt.Sprintf("k%05d", i); string(it.Key()) != want || string(it.Value()) != fmt.Sprint("v", i) {
			t.Fatalf("snapshot at %q = %q, want %q", it.Key(), it.Value(), want)
		}
		if i%500 == 0 { // rewrite the rest of the range under the iterator
			b := s.NewBatch()
			must(t, b.(meta.RangeDeleter).DeleteRange(fmt.Appendf(nil, "k%05d", i+1), []byte("k99999")))
			must(t, b.Set([]byte("k00000x"), []byte("new")))
			must(t, b.Commit(false))
			b.Close()
		}
		i++
	}
	must(t, it.Close())
	if i != n {
		t.Fatalf("snapshot iterated %d keys, want %d", i, n)
	}
	storetest.WantMissing(t, snap, "k00000x")
	storetest.WantValue(t, snap, "k02999", "v2999")
	storetest.WantMissing(t, s, "k02999")
}

// Each commit takes a new volume version from the sequence; an empty one
// takes none.
func testVersionPerCommit(t *testing.T, e *env) {
	s := e.open(t)
	var last int64
	for i := range 5 {
		storetest.Commit(t, s, map[string][]byte{"k": fmt.Appendf(nil, "%d", i)})
		if v := s.Version(); v <= last {
			t.Fatalf("commit %d: version %d after %d", i, v, last)
		}
		last = s.Version()
	}
	b := s.NewBatch()
	must(t, b.Commit(false))
	if s.Version() != last {
		t.Fatalf("an empty commit moved the version from %d to %d", last, s.Version())
	}
}

func testDiskUsageGrows(t *testing.T, e *env) {
	s := e.open(t)
	before := s.DiskUsage()
	b := s.NewBatch()
	val := bytes.Repeat([]byte("x"), 1000)
	for i := range 2000 {
		must(t, b.Set(fmt.Appendf(nil, "k%05d", i), val))
	}
	must(t, b.Commit(false))
	if after := s.DiskUsage(); after < before+2000*1000 {
		t.Fatalf("DiskUsage %d after 2 MB of values, %d before", after, before)
	}
}

// A schema written by a newer doppel (a higher format) is refused with a
// message that says to upgrade.
func testNewerFormatRefused(t *testing.T, e *env) {
	schema := e.schema()
	s, err := pgstore.Open(context.Background(), pgstore.Options{URL: e.dsn, Schema: schema, Create: true})
	must(t, err)
	s.Close()
	c, err := pgx.Connect(context.Background(), e.dsn)
	must(t, err)
	_, err = c.Exec(context.Background(), fmt.Sprintf("UPDATE %s.format SET format = %d", schema, pgstore.FormatVersion+1))
	c.Close(context.Background())
	must(t, err)
	s, err = pgstore.Open(context.Background(), pgstore.Options{URL: e.dsn, Schema: schema})
	if err == nil {
		s.Close()
		t.Fatal("a newer format was opened")
	}
	if !strings.Contains(err.Error(), "upgrade") {
		t.Fatalf("error %q does not say to upgrade", err)
	}
}

// Opening a schema that holds no volume, without Create, fails with
// ErrNoVolume and leaves no schema behind (a mistyped name must not turn
// into an empty volume that listings then show).
func testMissingNotCreated(t *testing.T, e *env) {
	schema := e.schema()
	s, err := pgstore.Open(context.Background(), pgstore.Options{URL: e.dsn, Schema: schema})
	if err == nil {
		s.Close()
		t.Fatal("a missing schema was opened")
	}
	if !errors.Is(err, pgstore.ErrNoVolume) {
		t.Fatalf("open of a missing schema: %v, want ErrNoVolume", err)
	}
	c, err := pgx.Connect(context.Background(), e.dsn)
	must(t, err)
	defer c.Close(context.Background())
	var n int
	must(t, c.QueryRow(context.Background(), `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, schema).Scan(&n))
	if n != 0 {
		t.Fatalf("a failed open left schema %s behind", schema)
	}
}

// A batch reads its own writes and, for every other key, the latest
// committed state, also commits made after it began (as Pebble's batches
// do: the namespace relies on it).
func testBatchSeesLaterCommits(t *testing.T, e *env) {
	s := e.open(t)
	storetest.Commit(t, s, map[string][]byte{"a": []byte("1"), "gone": []byte("x"), "kept": []byte("k")})
	b := s.NewBatch()
	defer b.Close()
	must(t, b.Delete([]byte("gone")))
	storetest.Commit(t, s, map[string][]byte{"later": []byte("L"), "kept": []byte("k2")})
	storetest.WantMissing(t, b, "gone")
	storetest.WantValue(t, b, "kept", "k2")
	storetest.WantValue(t, b, "later", "L")
	if got := storetest.Keys(t, b, "", "", false); !slices.Equal(got, []string{"a", "kept", "later"}) {
		t.Fatalf("batch keys %q", got)
	}
	must(t, b.Set([]byte("a"), []byte("2")))
	storetest.WantValue(t, b, "a", "2")
	storetest.WantValue(t, s, "a", "1")
}

// After the server restarts (every connection of the pool is gone), reads
// go on without an error, what was committed before is there, and
// commits and snapshots work again: no remount needed.
func testServerRestart(t *testing.T, e *env) {
	s := e.open(t)
	fill(t, s, 100)
	a, b := s.Snapshot(), s.Snapshot() // more than one connection in the pool
	must(t, a.Close())
	must(t, b.Close())
	e.srv.Restart(t)
	storetest.WantValue(t, s, "k00042", "v42")
	if got := storetest.Keys(t, s, "k", "l", false); len(got) != 100 {
		t.Fatalf("%d keys after the restart, want 100", len(got))
	}
	storetest.Commit(t, s, map[string][]byte{"after": []byte("restart")})
	snap := s.Snapshot()
	defer snap.Close()
	storetest.WantValue(t, snap, "after", "restart")
}

// A page fetch that fails in the middle of a scan (here: the table is
// dropped under it) stops the iterator of the store and of a batch with
// Error set, which Close returns too: the scan does not look complete.
func testIteratorErrorIsNotTheEnd(t *testing.T, e *env) {
	schema := e.schema()
	s, err := pgstore.Open(context.Background(), pgstore.Options{URL: e.dsn, Schema: schema, Create: true})
	must(t, err)
	defer s.Close()
	fill(t, s, 100)
	b := s.NewBatch()
	defer b.Close()
	its := map[string]meta.Iterator{}
	for name, r := range map[string]meta.Reader{"store": s, "batch": b} {
		it, err := r.NewIter([]byte("k"), []byte("l"))
		must(t, err)
		if !it.First() || it.Error() != nil {
			t.Fatalf("%s: First: valid %v, error %v", name, it.Valid(), it.Error())
		}
		its[name] = it
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, e.dsn)
	must(t, err)
	defer c.Close(ctx)
	_, err = c.Exec(ctx, "DROP TABLE "+schema+".kv")
	must(t, err)
	for name, it := range its {
		n := 1
		for it.Next() {
			n++
		}
		if n >= 100 {
			t.Fatalf("%s: walked all %d keys of a dropped table", name, n)
		}
		if it.Error() == nil {
			t.Fatalf("%s: the scan stopped after %d of 100 keys with no error", name, n)
		}
		if err := it.Close(); err == nil || err.Error() != it.Error().Error() {
			t.Fatalf("%s: Close() = %v, want %v", name, err, it.Error())
		}
	}
}

// GetMany returns the values of the keys in their order in one statement:
// nil for a missing key, an empty slice for an empty value, duplicates
// answered twice.
func testGetMany(t *testing.T, e *env) {
	s := e.open(t)
	fill(t, s, 20)
	b := s.NewBatch()
	must(t, b.Set([]byte("empty"), []byte{}))
	must(t, b.Commit(true))
	must(t, b.Close())
	keys := [][]byte{[]byte("k00007"), []byte("nope"), []byte("empty"), []byte("k00003"), []byte("k00007")}
	var mg meta.MultiGetter = s
	got, err := mg.GetMany(keys)
	must(t, err)
	if len(got) != len(keys) {
		t.Fatalf("%d values for %d keys", len(got), len(keys))
	}
	for i, k := range keys {
		want, err := s.Get(k)
		switch {
		case err == meta.ErrNotFound && got[i] != nil:
			t.Errorf("%s: got %q, want nil (missing)", k, got[i])
		case err == nil && (got[i] == nil || !bytes.Equal(got[i], want)):
			t.Errorf("%s: got %q, want %q", k, got[i], want)
		case err != nil && err != meta.ErrNotFound:
			t.Fatal(err)
		}
	}
}
