package pgstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/meta/storetest"
)

// A listener sees another session's commit at once (its handler runs and
// the record cache no longer answers with the old value), keeps one
// connection while nothing goes wrong, and runs its handler about once a
// second without notifications or with its own session's only.
func testListen(t *testing.T, e *env) {
	a := e.open(t)
	b, err := pgstore.Open(context.Background(), pgstore.Options{URL: e.dsn, Schema: a.Schema()})
	must(t, err)
	defer b.Close()
	_, err = a.Register(pgstore.SessionInfo{Host: "a", PID: 1, Mount: "/a"})
	must(t, err)
	_, err = b.Register(pgstore.SessionInfo{Host: "b", PID: 2, Mount: "/b"})
	must(t, err)
	storetest.Commit(t, a, map[string][]byte{"k": []byte("old")})
	storetest.WantValue(t, b, "k", "old") // cached by b now

	var calls atomic.Int64
	woke := make(chan struct{}, 100)
	stop := b.Listen(func() {
		calls.Add(1)
		select {
		case woke <- struct{}{}:
		default:
		}
	})
	defer stop()
	time.Sleep(300 * time.Millisecond) // listening
	// The fastest of three commits: one alone, on a loaded machine, could
	// take longer than the poll's pace with the notification working.
	fastest := time.Hour
	for range 3 {
		for len(woke) > 0 {
			<-woke
		}
		start := time.Now()
		lb, _, err := a.LockedBatch()
		must(t, err)
		must(t, lb.Set([]byte("k"), []byte("new")))
		must(t, lb.Commit(false))
		select {
		case <-woke:
		case <-time.After(5 * time.Second):
			t.Fatal("the listener did not see the other session's commit")
		}
		fastest = min(fastest, time.Since(start))
	}
	if fastest > 500*time.Millisecond {
		t.Errorf("the listener took %v to see the fastest of three commits", fastest)
	}
	storetest.WantValue(t, b, "k", "new")

	before := calls.Load()
	time.Sleep(3 * time.Second)
	if n := calls.Load() - before; n < 2 || n > 5 {
		t.Errorf("the handler ran %d times in 3 s without notifications, want about 3", n)
	}
	// The listening session's own commits wake its wait but not the
	// handler, which reads the store each time: it keeps the poll's pace.
	before, start := calls.Load(), time.Now()
	for i := range 40 {
		storetest.Commit(t, b, map[string][]byte{"own": {byte(i)}})
		time.Sleep(10 * time.Millisecond)
	}
	polls := int64(time.Since(start)/time.Second) + 2
	if n := calls.Load() - before; n > polls {
		t.Errorf("the handler ran %d times during 40 commits of its own session, want at most %d (the poll's)", n, polls)
	}
	if n := b.ListenConns(); n != 1 {
		t.Errorf("the listener made %d connections, want 1", n)
	}
}
