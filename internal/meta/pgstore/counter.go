package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/doppelfs/doppel/internal/meta"
)

var _ meta.Counters = (*Store)(nil)

// Reserve implements meta.Counters with one upsert statement: the row
// lock it takes serializes reservations of every host, so each gets a
// range of its own. Its commit waits for the WAL flush even where the
// server commits without (a crash must not hand a range out twice: the
// commits sent again after it name packs of the range). A reservation
// whose outcome is unknown (the connection was lost after the statement
// was sent) is sent again: the worst outcome is a range nobody uses.
func (s *Store) Reserve(key []byte, n, floor uint64) (uint64, error) {
	if n == 0 || n > math.MaxInt64/2 || floor > math.MaxInt64/2 {
		return 0, fmt.Errorf("pgstore: reserve %d above %d: out of range", n, floor)
	}
	var got int64
	var err error
	for range 3 {
		err = s.retry(func(ctx context.Context) error {
			pb := &pgx.Batch{}
			pb.Queue(flushedCommit)
			pb.Queue(s.q.reserve, key, int64(floor), int64(n))
			br := s.pool.SendBatch(ctx, pb)
			_, err := br.Exec()
			if err == nil {
				err = br.QueryRow().Scan(&got)
			}
			if cerr := br.Close(); err == nil {
				err = cerr
			}
			return err
		})
		if err == nil || !connLost(err) {
			break
		}
	}
	if s.cache != nil {
		s.cache.forget(key) // written behind the cache's back
	}
	if err != nil {
		return 0, fmt.Errorf("pgstore: reserve: %w", err)
	}
	if got < int64(n) {
		return 0, errors.New("pgstore: reserve: counter record is damaged")
	}
	return uint64(got), nil
}
