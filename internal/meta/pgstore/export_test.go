package pgstore

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// OpenCounting opens a store whose connections count the writes they send
// to the server: each request the client sends and then waits on (a
// statement, a pipeline, a prepare) is one write, so the count is the
// number of round trips.
func OpenCounting(ctx context.Context, o Options) (*Store, *atomic.Int64, error) {
	n := new(atomic.Int64)
	s, err := open(ctx, o, func(cfg *pgxpool.Config) {
		dial := cfg.ConnConfig.DialFunc
		cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{c, n}, nil
		}
	})
	return s, n, err
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(b)
}

const FirstPage, MaxPage = firstPage, maxPage

// Retry runs fn as a commit runs its round trip.
func Retry(fn func() error) (error, int64) {
	s := &Store{timeout: time.Second}
	err := s.retry(func(context.Context) error { return fn() })
	return err, s.retries.Load()
}
