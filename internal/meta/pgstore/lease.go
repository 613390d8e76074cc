package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/doppelfs/doppel/internal/meta"
)

var _ meta.Leaser = (*Store)(nil)

// TryLease implements meta.Leaser (docs/SHARED.md, 9.5): background work
// that one host at a time must do (compaction, the orphan sweep, journal
// pruning) runs under a lease, a row of the leases table that this
// session holds until ttl after its last renewal. The upsert takes the
// lease when it is free, expired (server time), already this session's
// (a renewal) or held by a session whose process died (its session lock
// is gone: no waiting after a kill -9); otherwise another live host holds
// it.
// A store without a session is the only process: it always gets it.
func (s *Store) TryLease(name string, ttl time.Duration) (bool, error) {
	id := s.SessionID()
	if id == 0 {
		return true, nil
	}
	var holder int64
	err := s.retry(func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, s.q.lease, name, id, ttl.Seconds()).Scan(&holder)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil && holder == id, err
}

// leaseStmt claims or renews a lease.
func leaseStmt(q func(string) string) string {
	return q(`INSERT INTO S.leases AS l (name, session, expires) VALUES ($1, $2, now() + make_interval(secs => $3))
		ON CONFLICT (name) DO UPDATE SET session = excluded.session, expires = excluded.expires
		WHERE l.expires < now() OR l.session = excluded.session OR NOT ` + sessionHeld("l.session") + `
		RETURNING session`)
}
