package pgstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/jackc/pgx/v5"
)

// querier is what runs read statements: the pool, or a snapshot's
// connection (pgxpool.Conn).
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// reader runs the read statements of one view of the store: the latest
// committed state (the pool) or a snapshot (its connection, which mu
// serializes).
type reader struct {
	q       querier
	mu      *sync.Mutex // nil for the pool
	st      *stmts
	timeout time.Duration
}

type kv struct{ k, v []byte }

// rows runs a statement that returns (k, v) rows and collects them; the
// slices are the caller's.
func (r *reader) rows(sql string, args ...any) ([]kv, error) {
	if r.mu != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	rows, err := r.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []kv
	for rows.Next() {
		var e kv
		if err := rows.Scan(&e.k, &e.v); err != nil { // Scan copies bytea
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func (r *reader) Get(key []byte) ([]byte, error) {
	if r.mu != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	rows, err := r.q.Query(ctx, r.st.get, key)
	if err != nil {
		return nil, err
	}
	v, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[[]byte])
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, meta.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

func (r *reader) NewIter(lower, upper []byte) (meta.Iterator, error) {
	p := newPager(r, lower, upper)
	return newIter(p, lower, upper), nil
}
