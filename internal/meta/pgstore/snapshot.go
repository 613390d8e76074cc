package pgstore

import (
	"context"
	"sync"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/jackc/pgx/v5/pgxpool"
)

// snapshot is a REPEATABLE READ, read-only transaction on a connection of
// its own, held until Close. Its reads and iterators run on that
// connection one at a time.
type snapshot struct {
	reader
	conn   *pgxpool.Conn
	closed bool
}

// Snapshot begins the transaction and takes its snapshot in one round
// trip: PostgreSQL takes it at the first statement, not at BEGIN, so a
// statement goes with it.
func (s *Store) Snapshot() meta.Snapshot {
	var conn *pgxpool.Conn
	err := s.r.again(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		defer cancel()
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		if _, err := c.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT 1"); err != nil {
			c.Release() // the pool drops a connection left in a transaction
			return err
		}
		conn = c
		return nil
	})
	if err != nil {
		return failedSnapshot{err}
	}
	return &snapshot{reader: reader{q: conn, mu: &sync.Mutex{}, st: s.q, timeout: s.timeout}, conn: conn}
}

func (sn *snapshot) Close() error {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if sn.closed {
		return nil
	}
	sn.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), sn.timeout)
	defer cancel()
	_, err := sn.conn.Exec(ctx, "ROLLBACK")
	sn.conn.Release()
	return err
}

// failedSnapshot is a snapshot that could not begin: every read fails.
type failedSnapshot struct{ err error }

func (f failedSnapshot) Get([]byte) ([]byte, error)                 { return nil, f.err }
func (f failedSnapshot) NewIter(_, _ []byte) (meta.Iterator, error) { return nil, f.err }
func (f failedSnapshot) Close() error                               { return nil }
