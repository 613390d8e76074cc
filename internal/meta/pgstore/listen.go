package pgstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/doppelfs/doppel/internal/meta"
)

// Seeing other hosts' commits (docs/SHARED.md, 9.3). Every commit
// notifies the volume's channel with its session and version; a listener
// on a connection of its own drops the record cache when another
// session's notification arrives and calls its handler, which reads what
// changed from the journal. A notification only wakes the handler: the
// handler also runs every pollEvery, so a notification lost (while the
// listener's connection was down) costs latency, never correctness.

// pollEvery is how often the handler runs without a notification.
const pollEvery = time.Second

// Fresh returns a reader of the latest committed state that bypasses the
// record cache (the journal and the version, read after other hosts'
// commits).
func (s *Store) Fresh() meta.Reader { return &s.r }

// Listen starts the listener; handle runs in one goroutine, after other
// sessions' commits (the record cache dropped first) and every pollEvery,
// but not after this session's own.
// stop ends it and waits for it.
func (s *Store) Listen(handle func()) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var conn *pgx.Conn
		defer func() {
			if conn != nil {
				conn.Close(context.Background())
			}
		}()
		var handled time.Time
		for {
			select {
			case <-quit:
				return
			default:
			}
			others := false
			if conn == nil || conn.IsClosed() {
				conn = s.listenConn()
				// Whatever came while the connection was down is unknown.
				s.DropCaches()
				others = true
			}
			if conn != nil && s.waitOthers(conn, quit) {
				s.DropCaches()
				others = true
			}
			// This session's own notifications wake the wait too; they
			// run the handler only at the poll's pace (each run reads
			// the store).
			if others || time.Since(handled) >= pollEvery {
				handle()
				handled = time.Now()
			}
			if conn == nil {
				select {
				case <-quit:
					return
				case <-time.After(pollEvery):
				}
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// listenConn connects and LISTENs, or returns nil.
func (s *Store) listenConn() *pgx.Conn {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, s.connCfg)
	if err != nil {
		return nil
	}
	s.listenConns.Add(1)
	if _, err := c.Exec(ctx, "LISTEN doppel_"+s.schema); err != nil {
		c.Close(context.Background())
		return nil
	}
	return c
}

// waitOthers waits up to pollEvery for notifications and reports whether
// one came from another session; notifications that arrive together are
// taken at once.
func (s *Store) waitOthers(conn *pgx.Conn, quit <-chan struct{}) (others bool) {
	wait := pollEvery
	for {
		n, err := s.waitOne(conn, quit, wait)
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !pgconnTimeout(err) {
				conn.Close(context.Background())
			}
			return others
		}
		if !s.ownNotification(n.Payload) {
			others = true
		}
		wait = 5 * time.Millisecond // take what else is queued without waiting long
	}
}

// waitOne waits up to d for one notification, or until quit closes.
func (s *Store) waitOne(conn *pgx.Conn, quit <-chan struct{}, d time.Duration) (*pgconn.Notification, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	go func() {
		select {
		case <-quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	return conn.WaitForNotification(ctx)
}

// ownNotification reports whether a payload ("SESSION VERSION") is this
// store's session's.
func (s *Store) ownNotification(payload string) bool {
	id, _, _ := strings.Cut(payload, " ")
	n, err := strconv.ParseInt(id, 10, 64)
	return err == nil && n != 0 && n == s.SessionID()
}

// pgconnTimeout reports a wait that ended by its deadline.
func pgconnTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
