package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/meta/storetest"
)

// Locked batches of two stores on one schema (two hosts) run one at a
// time: the second waits for the first to commit, or to be closed, and
// then reads what the first committed, in the same step as it takes the
// lock.
func testLockedBatches(t *testing.T, e *env) {
	a := e.open(t)
	b, err := pgstore.Open(context.Background(), pgstore.Options{URL: e.dsn, Schema: a.Schema()})
	must(t, err)
	defer b.Close()
	storetest.Commit(t, a, map[string][]byte{"n": []byte("0")})
	b.Get([]byte("n")) // b caches "0"

	first, vals, err := a.LockedBatch([]byte("n"))
	must(t, err)
	if string(vals[0]) != "0" {
		t.Fatalf("the first locked batch read %q", vals[0])
	}
	got := make(chan string, 1)
	go func() {
		second, vals, err := b.LockedBatch([]byte("n"), []byte("missing"))
		if err != nil {
			t.Error(err)
			got <- ""
			return
		}
		defer second.Close()
		if vals[1] != nil {
			t.Errorf("a missing key read as %q", vals[1])
		}
		got <- string(vals[0])
	}()
	select {
	case v := <-got:
		t.Fatalf("the second locked batch did not wait (read %q)", v)
	case <-time.After(300 * time.Millisecond):
	}
	must(t, first.Set([]byte("n"), []byte("1")))
	must(t, first.Commit(false))
	select {
	case v := <-got:
		if v != "1" {
			t.Fatalf("the second locked batch read %q after the first committed 1", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second locked batch still waits after the first committed")
	}
	b.DropCaches()
	storetest.WantValue(t, b, "n", "1")

	// Close without Commit releases the lock and writes nothing.
	third, _, err := a.LockedBatch()
	must(t, err)
	must(t, third.Set([]byte("n"), []byte("never")))
	must(t, third.Close())
	fourth, vals, err := b.LockedBatch([]byte("n"))
	must(t, err)
	if string(vals[0]) != "1" {
		t.Fatalf("after a closed locked batch, n is %q", vals[0])
	}
	must(t, fourth.Close())
}
