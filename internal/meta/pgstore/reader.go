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
	// lost, set for the pool, drops its connections when one was found
	// lost: the server may have restarted, and the others are lost too.
	lost func()
}

type kv struct{ k, v []byte }

// rows runs a statement that returns (k, v) rows and collects them; the
// slices are the caller's.
func (r *reader) rows(sql string, args ...any) ([]kv, error) {
	var out []kv
	err := r.again(func() (err error) {
		out, err = r.rowsOnce(sql, args...)
		return err
	})
	return out, err
}

func (r *reader) rowsOnce(sql string, args ...any) ([]kv, error) {
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
	var v []byte
	err := r.again(func() (err error) {
		v, err = r.getOnce(key)
		return err
	})
	return v, err
}

func (r *reader) getOnce(key []byte) ([]byte, error) {
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

// GetMany reads the values of keys with one statement; nil for a key
// that does not exist.
func (r *reader) GetMany(keys [][]byte) ([][]byte, error) {
	rows, err := r.rows(r.st.getMany, keys)
	if err != nil {
		return nil, err
	}
	found := make(map[string][]byte, len(rows))
	for _, e := range rows {
		v := e.v
		if v == nil {
			v = []byte{}
		}
		found[string(e.k)] = v
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = found[string(k)]
	}
	return out, nil
}

func (r *reader) NewIter(lower, upper []byte) (meta.Iterator, error) {
	p := newPager(r, lower, upper)
	return newIter(p, lower, upper), nil
}

// readAttempts bounds the tries of a read of the pool whose connection was
// lost; the waits between them add up to about 3 s.
const readAttempts = 7

// again runs a read, and runs it again on a fresh connection when the
// pool's connection was lost (reads are idempotent). A snapshot's reads
// cannot move to another connection and are not tried again.
func (r *reader) again(read func() error) error {
	err := read()
	for attempt := 1; attempt < readAttempts && err != nil && r.lost != nil && connLost(err); attempt++ {
		r.lost()
		time.Sleep(time.Duration(25<<attempt) * time.Millisecond)
		err = read()
	}
	return err
}
