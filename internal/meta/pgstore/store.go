package pgstore

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is a volume's metadata in one PostgreSQL schema.
type Store struct {
	pool    *pgxpool.Pool
	q       *stmts
	r       reader // the latest committed state
	schema  string
	timeout time.Duration
	version atomic.Int64 // the highest volume version a commit took
	retries atomic.Int64 // commits sent again after a conflict
	usage   atomic.Int64 // the last DiskUsage answer
	trips   atomic.Int64 // requests sent and waited on (RoundTrips)
}

var (
	_ meta.Store          = (*Store)(nil)
	_ meta.CommitsDurable = (*Store)(nil)
	_ meta.RangeDeleter   = (*batch)(nil)
)

func (s *Store) Get(key []byte) ([]byte, error) { return s.r.Get(key) }

// GetMany implements meta.MultiGetter: one statement for all keys.
func (s *Store) GetMany(keys [][]byte) ([][]byte, error) { return s.r.GetMany(keys) }

func (s *Store) NewIter(lower, upper []byte) (meta.Iterator, error) {
	return s.r.NewIter(lower, upper)
}

// CommitsDurable: every commit is durable when it returns, so the
// content engine makes chunk data durable before each commit naming it.
func (s *Store) CommitsDurable() {}

// Sync does nothing: a commit returns once PostgreSQL has made it durable
// (synchronous_commit on, its default).
func (s *Store) Sync() error { return nil }

// DiskUsage is the space of the schema's tables, their indexes and TOAST
// data, and the sequence; when the server cannot answer, the last answer.
func (s *Store) DiskUsage() int64 {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	var n int64
	if err := s.pool.QueryRow(ctx, s.q.usage).Scan(&n); err != nil {
		return s.usage.Load()
	}
	s.usage.Store(n)
	return n
}

// Version is the highest volume version a commit of this Store took.
func (s *Store) Version() int64 { return s.version.Load() }

// Retries counts commits sent again after a conflict.
func (s *Store) Retries() int64 { return s.retries.Load() }

func (s *Store) sawVersion(v int64) {
	for {
		old := s.version.Load()
		if v <= old || s.version.CompareAndSwap(old, v) {
			return
		}
	}
}

// Close closes the pool's connections.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}
