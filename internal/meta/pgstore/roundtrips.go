package pgstore

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// RoundTrips is how many requests this Store sent to the server and
// waited on (a statement, a commit's pipeline, a prepare): each is one
// write on a connection, so the count is the round trips the store cost.
// Benchmarks report it per operation; an atomic add per write costs
// nothing next to the network.
func (s *Store) RoundTrips() int64 { return s.trips.Load() }

// TxLockWait is the time LockedBatch spent taking the volume's
// transaction lock (with the reads of the same round trip): how long this
// host's transactions waited for every host's.
func (s *Store) TxLockWait() time.Duration { return time.Duration(s.lockWait.Load()) }

// countWrites makes the pool's connections count their writes in n.
func countWrites(cfg *pgxpool.Config, n *atomic.Int64) {
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c, n}, nil
	}
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(b)
}
