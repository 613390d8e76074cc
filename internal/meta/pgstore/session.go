package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Sessions (docs/SHARED.md, 9.1): every process that opens a shared
// volume registers a row in the schema's sessions table. A session is
// live while
//   - it holds its session lock, a PostgreSQL advisory lock on a
//     connection of its own: when the process dies, the kernel closes
//     that connection and the server drops the lock at once, so a killed
//     daemon is seen dead without waiting;
//   - and its heartbeat, renewed every heartbeatEvery with the server's
//     clock (host clocks are never compared), is younger than LeaseTime,
//     which catches a process that hangs with its connection open.

// LeaseTime is how long a session (or a lease) outlives its last
// heartbeat.
const LeaseTime = 15 * time.Second

// heartbeatEvery is how often a session's heartbeat is renewed.
const heartbeatEvery = 2 * time.Second

// reapAfter is how old the heartbeat of a session without its lock must
// be before its row is removed: a live process whose connection was
// lost (a server restart) takes its lock again within a heartbeat or two.
var reapAfter = 3 * heartbeatEvery

// aloneWait is how long Register waits for another session to end before
// it refuses to be alone.
const aloneWait = 2 * time.Second

// SessionInfo is what a session says of itself.
type SessionInfo struct {
	Host  string
	PID   int
	Mount string // the mount point, or what the process does ("fsck")
	// Alone says the process runs the code for a volume one host uses:
	// while it lives, no other session may register (and it registers
	// only when no other lives).
	Alone bool
}

// Session is a row of the sessions table.
type Session struct {
	ID int64
	SessionInfo
	Started time.Time
	// Since is how long ago (server time) the heartbeat was renewed.
	Since time.Duration
	// Locked says the session's process holds its session lock.
	Locked bool
}

// Alive reports whether the session's process holds its lock and renewed
// its heartbeat within LeaseTime.
func (s Session) Alive() bool { return s.Locked && s.Since < LeaseTime }

func (s Session) String() string {
	alone := ""
	if s.Alone {
		alone = ", for one host only"
	}
	return fmt.Sprintf("session %d (host %s, pid %d, %s%s, heartbeat %.1f s ago)", s.ID, s.Host, s.PID, s.Mount, alone, s.Since.Seconds())
}

// ErrOtherSessions is returned by Register when a live session of
// another process exists and either it or the caller is alone.
var ErrOtherSessions = errors.New("the volume is in use by another session")

// session is this Store's registration.
type session struct {
	id   int64
	conn *pgx.Conn // holds the session lock; the heartbeat runs on it
	stop chan struct{}
	done chan struct{}
	lost chan struct{} // closed when the row was found gone
}

// Register adds this process's session. It fails with ErrOtherSessions
// (naming one) when another live session exists and info.Alone, or when
// a live session that is alone exists. The
// check, the insert and taking the session lock run in one transaction
// under an advisory lock of the sessions table, so two processes
// registering at once cannot both miss each other, and no process sees
// the new row without its lock. Rows of dead sessions are removed. A
// goroutine renews the heartbeat until Unregister.
func (s *Store) Register(info SessionInfo) (int64, error) {
	if s.sess != nil {
		return 0, errors.New("pgstore: session already registered")
	}
	var se *session
	// A process killed just now may still look alive for a moment (the
	// server drops its lock once it notices the closed connection): a
	// refusal is only given after the other session stayed alive a while.
	deadline := time.Now().Add(aloneWait)
	err := s.retry(func(ctx context.Context) error {
		conn, err := pgx.ConnectConfig(ctx, s.connCfg)
		if err != nil {
			return err
		}
		id, err := s.register(ctx, conn, info)
		for errors.Is(err, ErrOtherSessions) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			id, err = s.register(ctx, conn, info)
		}
		if err != nil {
			conn.Close(context.Background())
			return err
		}
		se = &session{id: id, conn: conn, stop: make(chan struct{}), done: make(chan struct{}), lost: make(chan struct{})}
		return nil
	})
	if err != nil {
		return 0, err
	}
	s.sess = se
	go s.heartbeat(se)
	return se.id, nil
}

func (s *Store) register(ctx context.Context, conn *pgx.Conn, info SessionInfo) (int64, error) {
	var id int64
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.q.sessionsLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.q.sessionsReap, reapAfter.Seconds(), LeaseTime.Seconds()); err != nil {
			return err
		}
		all, err := listSessions(ctx, tx, s.q.sessionsAll)
		if err != nil {
			return err
		}
		for _, o := range all {
			if o.Alive() && (info.Alone || o.Alone) {
				return fmt.Errorf("%w: %s", ErrOtherSessions, o)
			}
		}
		if err := tx.QueryRow(ctx, s.q.sessionsAdd, info.Host, info.PID, info.Mount, info.Alone).Scan(&id); err != nil {
			return err
		}
		// A session-level lock: it outlives the transaction.
		_, err = tx.Exec(ctx, s.q.sessionLock, id)
		return err
	})
	return id, err
}

// heartbeat renews the session's heartbeat every heartbeatEvery until
// stopped. When the session's connection is lost (a server restart), it
// connects again and takes the session lock again, if the row is still
// there. A row found gone means another host judged the session dead and
// removed it: lost is closed, and the owner must stop writing (what the
// session held may have been cleaned up).
func (s *Store) heartbeat(se *session) {
	defer close(se.done)
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-se.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), heartbeatEvery)
		gone, err := s.beat(ctx, se)
		if err == nil && !gone {
			s.maintainChanges(ctx, se.conn)
		}
		cancel()
		if gone {
			close(se.lost)
			return
		}
		if err != nil && (connLost(err) || se.conn.IsClosed()) {
			s.reconnect(se)
		}
	}
}

// beat renews the heartbeat; gone reports the row missing.
func (s *Store) beat(ctx context.Context, se *session) (gone bool, err error) {
	tag, err := se.conn.Exec(ctx, s.q.sessionsBeat, se.id)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 0, nil
}

// reconnect replaces the session's lost connection and takes the session
// lock again on the new one.
func (s *Store) reconnect(se *session) {
	se.conn.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), heartbeatEvery)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, s.connCfg)
	if err != nil {
		return // the next beat fails and tries again
	}
	if _, err := c.Exec(ctx, s.q.sessionLock, se.id); err != nil {
		c.Close(context.Background())
		return
	}
	se.conn = c
}

// SessionID is this Store's session, 0 if none.
func (s *Store) SessionID() int64 {
	if s.sess == nil {
		return 0
	}
	return s.sess.id
}

// SessionLost is closed when this Store's session row was removed by
// another host (it judged the session dead); nil without a session.
func (s *Store) SessionLost() <-chan struct{} {
	if s.sess == nil {
		return nil
	}
	return s.sess.lost
}

// SetSessionMount records what the session serves (its mount point).
func (s *Store) SetSessionMount(mount string) error {
	if s.sess == nil {
		return errors.New("pgstore: no session")
	}
	return s.retry(func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, s.q.sessionsMount, s.sess.id, mount)
		return err
	})
}

// Unregister stops the heartbeat, removes the session's row and closes
// its connection (which drops the session lock).
func (s *Store) Unregister() error {
	se := s.sess
	if se == nil {
		return nil
	}
	s.sess = nil
	close(se.stop)
	<-se.done
	err := s.retry(func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, s.q.sessionsDel, se.id)
		return err
	})
	se.conn.Close(context.Background())
	return err
}

// Sessions lists the volume's sessions, live and dead, oldest first.
func (s *Store) Sessions() ([]Session, error) {
	var out []Session
	err := s.r.again(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		defer cancel()
		var err error
		out, err = listSessions(ctx, s.pool, s.q.sessionsAll)
		return err
	})
	return out, err
}

type queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func listSessions(ctx context.Context, q queryer, sql string) ([]Session, error) {
	rows, err := q.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		var se Session
		var since float64
		if err := rows.Scan(&se.ID, &se.Host, &se.PID, &se.Mount, &se.Alone, &se.Started, &since, &se.Locked); err != nil {
			return nil, err
		}
		se.Since = time.Duration(since * float64(time.Second))
		out = append(out, se)
	}
	return out, rows.Err()
}

// sessionHeld is the SQL condition that the process of the session whose
// id is the expression id holds its session lock (spliced into
// statements whose schema placeholder is then replaced).
func sessionHeld(id string) string {
	return `EXISTS (SELECT 1 FROM pg_locks pl WHERE pl.locktype = 'advisory' AND pl.granted
		AND pl.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND pl.classid::bigint = (hashtext('doppel session ' || 'S')::bigint & 4294967295)
		AND pl.objid::bigint = ` + id + ` AND pl.objsubid = 2)`
}

// sessionStmts are the statements on the sessions table. The session
// lock is the advisory lock (hashtext('doppel session SCHEMA'), id);
// pg_locks shows it as classid, objid with objsubid 2.
func sessionStmts(q func(string) string) (tableLock, reap, add, lock, beat, mount, del, all string) {
	held := sessionHeld("s.id")
	return q(`SELECT pg_advisory_xact_lock(hashtext('doppel sessions ' || 'S'))`),
		q(`DELETE FROM S.sessions s WHERE (now() - heartbeat > make_interval(secs => $1) AND NOT ` + held + `)
			OR now() - heartbeat > make_interval(secs => $2)`),
		q(`INSERT INTO S.sessions (host, pid, mount, alone) VALUES ($1, $2, $3, $4) RETURNING id`),
		q(`SELECT pg_advisory_lock(hashtext('doppel session ' || 'S'), $1::int)`),
		q(`UPDATE S.sessions SET heartbeat = now() WHERE id = $1`),
		q(`UPDATE S.sessions SET mount = $2 WHERE id = $1`),
		q(`DELETE FROM S.sessions WHERE id = $1`),
		q(`SELECT s.id, s.host, s.pid, s.mount, s.alone, s.started, extract(epoch FROM now() - s.heartbeat)::float8, ` + held + `
			FROM S.sessions s ORDER BY s.id`)
}
