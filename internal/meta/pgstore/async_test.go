package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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

// A crash of the server right after a commit without sync loses it (the
// test server's WAL writer waits 10 s): the store sends it again before
// anything reads the volume without it (here: the first read after the
// crash), and goes on. A store opened again (a new mount) finds it.
//
// The WAL writer still writes every WAL page a commit fills, so when the
// second commit crosses into a new page the crash keeps the first and
// loses only the second; when both commits fit in a page written before,
// it loses neither, and the attempt is made again on a new schema.
func testCrashLosesUnflushedCommits(t *testing.T, e *env) {
	var (
		schema string
		s      *pgstore.Store
	)
	for attempt := 1; ; attempt++ {
		schema = e.schema()
		s = e.openAt(t, schema)
		fill(t, s, 10) // without sync
		must(t, s.Sync())
		must(t, commitOne(s, "unsynced", "x", false))
		must(t, commitOne(s, "k00003", "overwritten", false))
		e.srv.Crash(t)
		reconnect(t, s)
		n := s.Replays()
		if n > 2 {
			t.Fatalf("%d commits sent again after the crash; it can have lost at most the 2 made since the sync", n)
		}
		if n > 0 {
			t.Logf("attempt %d: the crash lost %d of the 2 commits; they were sent again", attempt, n)
			break
		}
		if attempt == 5 {
			t.Fatalf("in %d attempts, no crash lost a commit made without sync, or none was sent again", attempt)
		}
		t.Logf("attempt %d: the WAL writer had written both commits before the crash; again", attempt)
	}
	storetest.WantValue(t, s, "unsynced", "x")
	storetest.WantValue(t, s, "k00003", "overwritten")

	must(t, commitOne(s, "after", "crash", false))
	must(t, commitOne(s, "after synced", "crash", true))
	lb, _, err := s.LockedBatch()
	must(t, err)
	must(t, lb.Set([]byte("locked"), []byte("after crash")))
	must(t, lb.Commit(false))
	must(t, lb.Close())
	must(t, s.Sync())

	again := e.openAt(t, schema)
	for k, v := range map[string]string{"unsynced": "x", "k00003": "overwritten", "k00007": "v7",
		"after": "crash", "after synced": "crash", "locked": "after crash"} {
		storetest.WantValue(t, again, k, v)
	}
}

// A commit without sync that the WAL writer (here: another session's
// synchronous commit) made durable survives the crash: the marker row
// says so, and nothing is sent again.
func testCrashKeepsUnflushedCommits(t *testing.T, e *env) {
	s := e.open(t)
	must(t, commitOne(s, "unsynced", "but written", false))
	ctx := context.Background()
	c, err := pgx.Connect(ctx, e.dsn)
	must(t, err)
	_, err = c.Exec(ctx, `CREATE TABLE IF NOT EXISTS public.flusher (x int);
		SET synchronous_commit = on; INSERT INTO public.flusher VALUES (1)`)
	c.Close(ctx)
	must(t, err)
	e.srv.Crash(t)
	reconnect(t, s)
	if n := s.Replays(); n != 0 {
		t.Fatalf("%d commits sent again after a crash that lost none", n)
	}
	storetest.WantValue(t, s, "unsynced", "but written")
	must(t, commitOne(s, "after", "crash", false))
	must(t, s.Sync())
}

// With the change log on (several hosts), a lost commit that held the
// transaction lock cannot be sent again (other hosts may have built on
// it, or committed in its place): the store fails. Commits, syncs and
// locked batches return ErrLostCommits (wrapping meta.ErrFailed), reads
// go on, and a store opened again (a new mount) works.
func testCrashLosesLockedCommitOfSeveralHosts(t *testing.T, e *env) {
	schema := e.schema()
	s := e.openAt(t, schema)
	must(t, s.TrackChanges())
	fill(t, s, 10)
	must(t, s.Sync())
	lb, _, err := s.LockedBatch()
	must(t, err)
	must(t, lb.Set([]byte("locked"), []byte("lost")))
	must(t, lb.Commit(false))
	must(t, lb.Close())
	e.srv.Crash(t)
	reconnect(t, s)

	err = commitOne(s, "after", "crash", false)
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

// Writers commit without sync, plain and locked, while the server
// crashes under them: afterwards every commit that returned is there
// (sent again if the crash lost it), in order: each writer's last key
// holds its last commit that returned, or a later one whose outcome the
// crash left unknown.
func testCrashDuringCommits(t *testing.T, e *env) {
	schema := e.schema()
	s := e.openAt(t, schema)
	const writers = 4
	type result struct{ ok, tried int } // the last commit that returned, the last one sent
	results := make([][]bool, writers)
	last := make([]result, writers)
	lastErr := make([]error, writers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var done atomic.Int64
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last[w] = result{-1, -1}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var b meta.Batch = s.NewBatch()
				if i%3 == 0 {
					lb, _, err := s.LockedBatch()
					if err != nil {
						lastErr[w] = err
						results[w] = append(results[w], false)
						continue
					}
					b = lb
				}
				b.Set(fmt.Appendf(nil, "w%d/%05d", w, i), []byte("x"))
				b.Set(fmt.Appendf(nil, "w%d/last", w), fmt.Appendf(nil, "%d", i))
				last[w].tried = i
				err := b.Commit(false)
				b.Close()
				results[w] = append(results[w], err == nil)
				if err != nil {
					lastErr[w] = err
				}
				if err == nil {
					last[w].ok = i
					done.Add(1)
				}
			}
		}()
	}
	waitDone := func(n int64) {
		for deadline := time.Now().Add(time.Minute); done.Load() < n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) { // a liveness bound, not a speed check
				close(stop)
				wg.Wait()
				t.Fatalf("%d commits returned, none more for a minute; last errors: %v", done.Load(), lastErr)
			}
		}
	}
	waitDone(200)
	e.srv.Crash(t)
	waitDone(done.Load() + 200)
	close(stop)
	wg.Wait()
	must(t, s.Sync())
	t.Logf("%d commits returned, %d sent again after the crash", done.Load(), s.Replays())

	again := e.openAt(t, schema)
	for w := range writers {
		for i, ok := range results[w] {
			if ok {
				storetest.WantValue(t, again, fmt.Sprintf("w%d/%05d", w, i), "x")
			}
		}
		got, err := again.Get(fmt.Appendf(nil, "w%d/last", w))
		must(t, err)
		var n int
		fmt.Sscan(string(got), &n)
		if n < last[w].ok || n > last[w].tried {
			t.Errorf("writer %d: last key holds commit %d; want from %d (its last that returned) to %d (its last sent)", w, n, last[w].ok, last[w].tried)
		}
	}
}

// Commits without sync are kept in memory until a flush covers them; past
// maxUnflushedBytes of them, a commit flushes at once.
func testUnflushedBound(t *testing.T, e *env) {
	defer pgstore.SetMaxUnflushedBytes(4096)()
	s := e.open(t)
	must(t, commitOne(s, "small", "x", false))
	if !s.Unflushed() {
		t.Fatal("a small commit without sync was flushed at once")
	}
	must(t, commitOne(s, "big", strings.Repeat("x", 8192), false))
	if s.Unflushed() {
		t.Fatal("commits past the bound were not flushed")
	}
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
