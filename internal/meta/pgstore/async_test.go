package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/meta/storetest"
)

// commitOne commits key=val, with or without sync.
func commitOne(s meta.Store, key, val string, sync bool) error {
	b := s.NewBatch()
	defer b.Close()
	if err := b.Set([]byte(key), []byte(val)); err != nil {
		return err
	}
	return b.Commit(sync)
}

// reconnect makes s drop the connections a crash broke: a read that
// finds one lost is tried again on new ones, whereas a commit sent on
// one fails (its outcome unknown).
func reconnect(t *testing.T, s meta.Store) {
	t.Helper()
	storetest.WantMissing(t, s, "never written")
}

// A crash of the server after commits without sync, before a Sync, may
// have lost them: the store fails rather than build on them. Commits,
// syncs and locked batches return ErrLostCommits (wrapping meta.ErrFailed),
// reads go on, and a store opened again (a new mount) works.
func testCrashAfterUnsyncedCommits(t *testing.T, e *env) {
	schema := e.schema()
	s := e.openAt(t, schema)
	fill(t, s, 10) // without sync
	must(t, s.Sync())
	must(t, commitOne(s, "unsynced", "x", false))
	e.srv.Crash(t)
	reconnect(t, s)

	err := commitOne(s, "after", "crash", false)
	if !errors.Is(err, pgstore.ErrLostCommits) || !errors.Is(err, meta.ErrFailed) {
		t.Fatalf("commit after the crash: %v; want ErrLostCommits and meta.ErrFailed", err)
	}
	if err := s.Sync(); !errors.Is(err, pgstore.ErrLostCommits) {
		t.Fatalf("Sync after the crash: %v; want ErrLostCommits", err)
	}
	if err := commitOne(s, "after", "crash", true); !errors.Is(err, pgstore.ErrLostCommits) {
		t.Fatalf("synced commit after the crash: %v; want ErrLostCommits", err)
	}
	if _, _, err := s.LockedBatch(); !errors.Is(err, pgstore.ErrLostCommits) {
		t.Fatalf("LockedBatch after the crash: %v; want ErrLostCommits", err)
	}
	storetest.WantValue(t, s, "k00007", "v7") // synced before the crash
	storetest.WantMissing(t, s, "after")

	again := e.openAt(t, schema)
	must(t, commitOne(again, "after", "remount", false))
	must(t, again.Sync())
	storetest.WantValue(t, again, "after", "remount")
	storetest.WantValue(t, again, "k00007", "v7")
}

// After a Sync, a crash loses nothing of this store's: its commits are
// there (the test server commits without a WAL flush unless asked, and
// an immediate shutdown loses what was not written: without the Sync's
// flush the last commit, and the schema with it, were gone), the next
// commit goes through (sent again after the guard took the new epoch),
// and the store does not fail.
func testCrashAfterSync(t *testing.T, e *env) {
	s := e.open(t)
	fill(t, s, 10)
	must(t, commitOne(s, "synced commit", "yes", true))
	must(t, commitOne(s, "synced", "by Sync", false))
	must(t, s.Sync())
	e.srv.Crash(t)
	reconnect(t, s)

	must(t, commitOne(s, "after", "crash", false))
	must(t, s.Sync())
	storetest.WantValue(t, s, "synced", "by Sync")
	storetest.WantValue(t, s, "synced commit", "yes")
	storetest.WantValue(t, s, "after", "crash")
	storetest.WantValue(t, s, "k00009", "v9")
	lb, _, err := s.LockedBatch()
	must(t, err)
	must(t, lb.Set([]byte("locked"), []byte("after crash")))
	must(t, lb.Commit(false))
	must(t, lb.Close())
	storetest.WantValue(t, s, "locked", "after crash")
}

// With FlushEvery, commits without sync are flushed behind the writer:
// once flushed, a crash loses nothing of them and does not stop the store.
func testFlushBehind(t *testing.T, e *env) {
	s, err := pgstore.Open(context.Background(), pgstore.Options{URL: e.dsn, Schema: e.schema(), Create: true, FlushEvery: 20 * time.Millisecond})
	must(t, err)
	defer s.Close()
	must(t, commitOne(s, "flushed", "behind", false))
	for deadline := time.Now().Add(10 * time.Second); s.Unflushed(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a commit without sync still unflushed after 10 s")
		}
	}
	e.srv.Crash(t)
	reconnect(t, s)
	must(t, commitOne(s, "after", "crash", false))
	storetest.WantValue(t, s, "flushed", "behind")
}
