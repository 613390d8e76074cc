package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/doppelfs/doppel/internal/meta/pgstore"
)

// Sessions: a process that asks to be alone is refused while another
// live session exists, and the refusal names it; a session whose process
// died (its connection closed) is dead at once, without waiting for its
// heartbeat to age, and its row goes once the heartbeat is older than the
// reconnect grace; a session whose row another host removed learns that
// it is lost; a server restart keeps sessions alive (they take their
// locks again).
func testSessions(t *testing.T, e *env) {
	defer pgstore.SetReapAfter(time.Second)()
	schema := e.schema()
	open := func() *pgstore.Store {
		s, err := pgstore.Open(context.Background(), pgstore.Options{URL: e.dsn, Schema: schema, Create: true})
		must(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b, c := open(), open(), open()
	ida, err := a.Register(pgstore.SessionInfo{Host: "ha", PID: 1, Mount: "/a", Alone: true})
	must(t, err)
	if _, err := b.Register(pgstore.SessionInfo{Host: "hb", PID: 2, Mount: "/b", Alone: true}); !errors.Is(err, pgstore.ErrOtherSessions) {
		t.Fatalf("second session alone: %v, want ErrOtherSessions", err)
	} else if want := fmt.Sprintf("session %d (host ha, pid 1, /a", ida); !strings.Contains(err.Error(), want) {
		t.Fatalf("refusal %q does not name %q", err, want)
	}
	// Another volume of the same database is another lock space: its
	// first session (also id 1) registers alone at once.
	other, err := pgstore.Open(context.Background(), pgstore.Options{URL: e.dsn, Schema: e.schema(), Create: true})
	must(t, err)
	// (A refusal would come as ErrOtherSessions, after aloneWait.)
	if _, err := other.Register(pgstore.SessionInfo{Host: "ho", PID: 9, Mount: "/o", Alone: true}); err != nil {
		t.Fatalf("a session of another volume: %v", err)
	}
	must(t, other.Close())
	// A session alone keeps out those that are not, too.
	if _, err := b.Register(pgstore.SessionInfo{Host: "hb", PID: 2, Mount: "/b"}); !errors.Is(err, pgstore.ErrOtherSessions) || !strings.Contains(err.Error(), "for one host only") {
		t.Fatalf("a session beside one alone: %v, want ErrOtherSessions naming it", err)
	}
	// Sessions that are not alone live side by side.
	must(t, a.Unregister())
	ida, err = a.Register(pgstore.SessionInfo{Host: "ha", PID: 1, Mount: "/a"})
	must(t, err)
	idb, err := b.Register(pgstore.SessionInfo{Host: "hb", PID: 2, Mount: "/b"})
	must(t, err)
	must(t, b.SetSessionMount("/mnt/b"))
	alive := func(s *pgstore.Store) map[int64]pgstore.Session {
		t.Helper()
		all, err := s.Sessions()
		must(t, err)
		out := map[int64]pgstore.Session{}
		for _, se := range all {
			if se.Alive() {
				out[se.ID] = se
			}
		}
		return out
	}
	if got := alive(c); len(got) != 2 || got[idb].Mount != "/mnt/b" || got[ida].Host != "ha" {
		t.Fatalf("live sessions %v, want %d and %d", got, ida, idb)
	}

	a.DropSessionConn() // a's process dies
	// The server drops the lock once its backend sees the connection
	// closed: milliseconds, not the lease time.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got := alive(c)
		if len(got) == 1 && got[idb].ID == idb {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("2 s after a died, live sessions %v, want only %d", got, idb)
		}
	}
	must(t, b.Unregister())
	if _, err := c.Register(pgstore.SessionInfo{Host: "hc", PID: 3, Mount: "/c", Alone: true}); err != nil {
		t.Fatalf("alone with only a dead session left: %v", err)
	}
	time.Sleep(1500 * time.Millisecond) // a's heartbeat is now older than the grace
	d := open()
	if _, err := d.Register(pgstore.SessionInfo{Host: "hd", PID: 4, Mount: "/d"}); !errors.Is(err, pgstore.ErrOtherSessions) {
		t.Fatalf("a session beside one alone: %v, want ErrOtherSessions", err)
	}
	must(t, c.Unregister())
	_, err = c.Register(pgstore.SessionInfo{Host: "hc", PID: 3, Mount: "/c"})
	must(t, err)
	_, err = d.Register(pgstore.SessionInfo{Host: "hd", PID: 4, Mount: "/d"})
	must(t, err)
	all, err := d.Sessions()
	must(t, err)
	for _, se := range all {
		if se.ID == ida {
			t.Fatalf("dead session %d still listed after the grace", ida)
		}
	}

	// Another host removes d's row: d learns it is lost.
	conn, err := pgx.Connect(context.Background(), e.dsn)
	must(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), fmt.Sprintf("DELETE FROM %s.sessions WHERE id = $1", schema), d.SessionID())
	must(t, err)
	if _, _, err := d.LockedBatch(); !errors.Is(err, pgstore.ErrSessionLost) {
		t.Fatalf("a transaction of a session whose row was removed: %v, want ErrSessionLost", err)
	}
	select {
	case <-d.SessionLost():
	case <-time.After(10 * time.Second):
		t.Fatal("a session whose row was removed did not learn it")
	}

	// c survives a server restart: it takes its lock again.
	e.srv.Restart(t)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if got, err := c.Sessions(); err == nil && len(got) > 0 {
			if live := alive(c); len(live) == 1 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("c is not alive again after the restart: %v", alive(c))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Leases: one session at a time holds a lease; its holder renews it; once
// it expired (server time) another session takes it; a store without a
// session always gets it.
func testLeases(t *testing.T, e *env) {
	schema := e.schema()
	open := func() *pgstore.Store {
		s, err := pgstore.Open(context.Background(), pgstore.Options{URL: e.dsn, Schema: schema, Create: true})
		must(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b, none := open(), open(), open()
	_, err := a.Register(pgstore.SessionInfo{Host: "a", PID: 1, Mount: "/a"})
	must(t, err)
	_, err = b.Register(pgstore.SessionInfo{Host: "b", PID: 2, Mount: "/b"})
	must(t, err)
	try := func(s *pgstore.Store, ttl time.Duration) bool {
		t.Helper()
		got, err := s.TryLease("work", ttl)
		must(t, err)
		return got
	}
	if !try(a, time.Second) {
		t.Fatal("a did not get a free lease")
	}
	if try(b, time.Second) {
		t.Fatal("b got the lease a holds")
	}
	if !try(a, time.Second) {
		t.Fatal("a could not renew its lease")
	}
	if !try(none, time.Second) {
		t.Fatal("a store without a session was refused a lease")
	}
	time.Sleep(1500 * time.Millisecond)
	if !try(b, time.Minute) {
		t.Fatal("b did not get the lease after it expired")
	}
	if try(a, time.Second) {
		t.Fatal("a got the lease b took over")
	}
}

// A lease held by a session whose process died is taken over at once.
func testLeaseOfDeadSession(t *testing.T, e *env) {
	schema := e.schema()
	a, err := pgstore.Open(context.Background(), pgstore.Options{URL: e.dsn, Schema: schema, Create: true})
	must(t, err)
	defer a.Close()
	b, err := pgstore.Open(context.Background(), pgstore.Options{URL: e.dsn, Schema: schema, Create: true})
	must(t, err)
	defer b.Close()
	_, err = a.Register(pgstore.SessionInfo{Host: "a", PID: 1, Mount: "/a"})
	must(t, err)
	_, err = b.Register(pgstore.SessionInfo{Host: "b", PID: 2, Mount: "/b"})
	must(t, err)
	if got, err := a.TryLease("work", time.Hour); err != nil || !got {
		t.Fatalf("a: %v %v", got, err)
	}
	a.DropSessionConn()
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got, err := b.TryLease("work", time.Hour)
		must(t, err)
		if got {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b did not take over the lease of a dead session within 2 s")
		}
	}
}
