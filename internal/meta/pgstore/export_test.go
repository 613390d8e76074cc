package pgstore

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// OpenCounting opens a store and returns its round-trip counter
// (Store.RoundTrips).
func OpenCounting(ctx context.Context, o Options) (*Store, *atomic.Int64, error) {
	s, err := Open(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	return s, &s.trips, nil
}

const FirstPage, MaxPage = firstPage, maxPage

// Retry runs fn as a commit runs its round trip.
func Retry(fn func() error) (error, int64) {
	s := &Store{timeout: time.Second}
	err := s.retry(func(context.Context) error { return fn() })
	return err, s.retries.Load()
}

// Schema is the store's schema.
func (s *Store) Schema() string { return s.schema }

// DropSessionConn closes the connection that holds s's session lock, as
// the death of its process would (the row stays).
func (s *Store) DropSessionConn() {
	close(s.sess.stop)
	<-s.sess.done
	s.sess.conn.Close(context.Background())
	s.sess = nil
}

// SetReapAfter changes how old a dead session's heartbeat must be before
// its row goes, and returns a function that restores it.
func SetReapAfter(d time.Duration) func() {
	old := reapAfter
	reapAfter = d
	return func() { reapAfter = old }
}

// ListenConns counts the connections s's listener made.
func (s *Store) ListenConns() int64 { return s.listenConns.Load() }

// OnConn runs fn on one of the pool's connections: set up as every
// statement of the store finds it.
func (s *Store) OnConn(ctx context.Context, fn func(*pgx.Conn) error) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return fn(c.Conn())
}

// LookupStatements are the store's statements that look keys up, each
// taking one bytea[] of keys.
func (s *Store) LookupStatements() []string { return []string{s.q.getMany, s.q.delKeys} }

// SetMaxUnflushedBytes changes how much a store keeps of commits not yet
// flushed before a commit flushes at once, and returns a function that
// restores it.
func SetMaxUnflushedBytes(n int64) func() {
	old := maxUnflushedBytes
	maxUnflushedBytes = n
	return func() { maxUnflushedBytes = old }
}
