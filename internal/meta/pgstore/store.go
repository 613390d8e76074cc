package pgstore

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is a volume's metadata in one PostgreSQL schema.
type Store struct {
	pool    *pgxpool.Pool
	q       *stmts
	r       reader          // the latest committed state
	cache   *recordCache    // nil when off
	connCfg *pgx.ConnConfig // for connections of their own (sessions)
	sess    *session        // this process's session, if registered

	listenConns atomic.Int64 // connections the listener made (tests)
	schema      string
	timeout     time.Duration
	version     atomic.Int64 // the highest volume version a commit took
	retries     atomic.Int64 // commits sent again after a conflict
	usage       atomic.Int64 // the last DiskUsage answer
	trips       atomic.Int64 // requests sent and waited on (RoundTrips)
	lockWait    atomic.Int64 // nanoseconds spent in LockedBatch (TxLockWait)
	ch          changeLog    // several hosts: what the others changed (changes.go)
	guard       crashGuard   // commits without a WAL flush, and a crash of the server (async.go)
	// flushBehind's (async.go); nil without Options.FlushEvery
	flushStop, flushDone chan struct{}

	committed atomic.Pointer[func()] // tests: runs once a locked batch's COMMIT returned, before its writes reach the cache (OnCommitted)
}

var (
	_ meta.Store          = (*Store)(nil)
	_ meta.CommitsDurable = (*Store)(nil)
	_ meta.RangeDeleter   = (*batch)(nil)
)

// Get reads key from the record cache, else from the server.
func (s *Store) Get(key []byte) ([]byte, error) {
	if s.cache == nil {
		return s.r.Get(key)
	}
	if v, known := s.cache.get(key); known {
		if v == nil {
			return nil, meta.ErrNotFound
		}
		return v, nil
	}
	t := s.cache.ticket(key)
	v, err := s.r.Get(key)
	switch {
	case err == nil:
		s.cache.fill(key, v, t)
	case errors.Is(err, meta.ErrNotFound):
		s.cache.fill(key, nil, t)
	}
	return v, err
}

// GetMany implements meta.MultiGetter: the keys the record cache does not
// know are read with one statement.
func (s *Store) GetMany(keys [][]byte) ([][]byte, error) {
	if s.cache == nil {
		return s.r.GetMany(keys)
	}
	out := make([][]byte, len(keys))
	var miss [][]byte
	var at []int
	var tickets []ticket
	for i, k := range keys {
		if v, known := s.cache.get(k); known {
			out[i] = v
			continue
		}
		miss, at, tickets = append(miss, k), append(at, i), append(tickets, s.cache.ticket(k))
	}
	if len(miss) == 0 {
		return out, nil
	}
	got, err := s.r.GetMany(miss)
	if err != nil {
		return nil, err
	}
	for j, v := range got {
		out[at[j]] = v
		s.cache.fill(miss[j], v, tickets[j])
	}
	return out, nil
}

func (s *Store) NewIter(lower, upper []byte) (meta.Iterator, error) {
	return s.r.NewIter(lower, upper)
}

// CommitsDurable: a commit may be durable as soon as it returns (one
// without sync once PostgreSQL's WAL writer flushes it), so the content
// engine makes chunk data durable before each commit naming it.
func (s *Store) CommitsDurable() {}

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

// Close ends the session, if any, removes the store's marker row and
// closes the pool's connections.
func (s *Store) Close() error {
	if s.flushStop != nil {
		close(s.flushStop)
		<-s.flushDone
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	s.pool.Exec(ctx, s.q.markDel, s.guard.owner) // best effort: Open reaps rows a week old
	cancel()
	err := s.Unregister()
	s.pool.Close()
	return err
}
