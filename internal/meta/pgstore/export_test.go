package pgstore

import (
	"context"
	"sync/atomic"
	"time"
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
