package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/meta/storetest"
)

// foreignOf takes a locked batch of s and returns what it says other
// hosts changed.
func foreignOf(t *testing.T, s *pgstore.Store) meta.Changes {
	t.Helper()
	b, _, err := s.LockedBatch()
	must(t, err)
	defer b.Close()
	return b.(meta.ForeignChanges).ForeignChanges()
}

// The change log (several hosts): a host's locked batch learns exactly
// which keys and ranges other hosts' transactions changed, drops only
// those from its record cache (others still cost no round trip), never
// counts its own commits, and takes everything as changed when it starts
// following the log and when the log was emptied (an unlogged table after
// a crash of the server). Commits outside the lock are not logged and do
// not wait for it.
func testChangeLog(t *testing.T, e *env) {
	ctx := context.Background()
	a, b := twoSessions(t, e, true)
	storetest.Commit(t, a, map[string][]byte{"k1": []byte("1"), "k2": []byte("2"), "r/1": []byte("x"), "r/2": []byte("y")})
	for _, s := range []*pgstore.Store{a, b} {
		if ch := foreignOf(t, s); !ch.All {
			t.Fatalf("the first locked batch after TrackChanges does not take everything as changed: %+v", ch)
		}
	}
	for _, k := range []string{"k1", "k2", "r/1"} {
		_, err := b.Get([]byte(k)) // cached
		must(t, err)
	}

	la, _, err := a.LockedBatch()
	must(t, err)
	must(t, la.Set([]byte("k1"), []byte("1b")))
	must(t, la.(meta.RangeDeleter).DeleteRange([]byte("r/"), []byte("r0")))
	must(t, la.Commit(false))
	if ch := foreignOf(t, a); !ch.Empty() {
		t.Fatalf("a's own commit is foreign to a: %+v", ch)
	}
	ch := foreignOf(t, b)
	span := func(k string) ([]byte, []byte) { return []byte(k), []byte(k + "\x00") }
	if ch.All || !ch.Changed(span("k1")) || !ch.Changed(span("r/1")) || ch.Changed(span("k2")) {
		t.Fatalf("b learns %+v; want k1 and the range r/ only", ch)
	}
	storetest.WantValue(t, b, "k1", "1b")
	storetest.WantMissing(t, b, "r/1")
	if n := fewestWrites(b.RoundTrips, func() { storetest.WantValue(t, b, "k2", "2") }); n != 0 {
		t.Errorf("reading k2, which nobody changed, cost %d round trips", n)
	}

	// The listener's path (DropCaches) reads the log too, and the next
	// locked batch still learns what it read.
	lk, _, err := a.LockedBatch()
	must(t, err)
	must(t, lk.Set([]byte("k2"), []byte("2b")))
	must(t, lk.Commit(false))
	b.DropCaches()
	storetest.WantValue(t, b, "k2", "2b")
	if ch := foreignOf(t, b); ch.All || !ch.Changed(span("k2")) {
		t.Fatalf("after DropCaches, b's locked batch learns %+v; want k2", ch)
	}

	// A commit outside the lock (journal cursors, the dead-span ledger)
	// neither waits for the lock, which a transaction of the same host
	// may hold while it waits for that commit, nor is logged.
	held, _, err := a.LockedBatch()
	must(t, err)
	storetest.Commit(t, a, map[string][]byte{"own/cursor": []byte("1")})
	must(t, held.Close())
	if ch := foreignOf(t, b); !ch.Empty() {
		t.Fatalf("a commit outside the lock was logged: %+v", ch)
	}

	// The log emptied, as a crash of the server empties it: every host
	// takes everything as changed. a synced first, so none of its
	// commits was at risk and its guard takes the new epoch (async.go).
	must(t, a.Sync())
	conn, err := pgx.Connect(ctx, e.dsn)
	must(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "TRUNCATE "+a.Schema()+".changes")
	must(t, err)
	storetest.Commit(t, a, map[string][]byte{"k2": []byte("2c")})
	if ch := foreignOf(t, b); !ch.All {
		t.Fatalf("after the log was emptied, b learns %+v; want everything", ch)
	}
	storetest.WantValue(t, b, "k2", "2c")
}

// Another host's commit that lands, and is heard of (the listener's
// DropCaches), between this host's COMMIT and the moment its writes reach
// its record cache: the lock is free as soon as COMMIT ran on the server,
// so the other host may write the same key at once. The cache must not
// then take this host's older value; it did, and with the change log the
// next transaction read it (the inode counter, which both hosts write,
// handed out a number twice: volume.TestForeignCommitDuringOwnCommit).
// With the log the key is dropped; without it (or when the log is lost)
// the whole cache is.
func testForeignCommitDuringOwnCommit(t *testing.T, e *env) {
	for _, logged := range []bool{true, false} {
		a, b := twoSessions(t, e, logged)
		storetest.Commit(t, a, map[string][]byte{"n": []byte("1")})
		foreignOf(t, a)
		foreignOf(t, b)
		storetest.WantValue(t, a, "n", "1") // cached
		a.OnCommitted(func() {
			a.OnCommitted(nil)
			lb, _, err := b.LockedBatch()
			must(t, err)
			must(t, lb.Set([]byte("n"), []byte("3")))
			must(t, lb.Commit(false))
			a.DropCaches() // the listener hears of b's commit
		})
		la, _, err := a.LockedBatch()
		must(t, err)
		must(t, la.Set([]byte("n"), []byte("2")))
		must(t, la.Commit(false))
		next, _, err := a.LockedBatch()
		must(t, err)
		got, err := next.Get([]byte("n"))
		must(t, err)
		must(t, next.Close())
		if string(got) != "3" {
			t.Fatalf("change log %v: after b's later commit, a's locked batch reads n = %q, want b's %q", logged, got, "3")
		}
		storetest.WantValue(t, a, "n", "3")
	}
}

// twoSessions opens a volume and a second store on it, as two hosts:
// both registered as sessions, both following the change log if logged.
// They are closed and unregistered when t ends.
func twoSessions(t *testing.T, e *env, logged bool) (a, b *pgstore.Store) {
	a = e.open(t)
	b, err := pgstore.Open(context.Background(), pgstore.Options{URL: e.dsn, Schema: a.Schema()})
	must(t, err)
	t.Cleanup(func() { b.Close() })
	for _, s := range []*pgstore.Store{a, b} {
		_, err := s.Register(pgstore.SessionInfo{Host: "test"})
		must(t, err)
		t.Cleanup(func() { s.Unregister() })
		if logged {
			must(t, s.TrackChanges())
		}
	}
	return a, b
}
