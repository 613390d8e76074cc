package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/doppelfs/doppel/internal/meta"
)

var (
	_ meta.TxLocker     = (*Store)(nil)
	_ meta.CacheDropper = (*Store)(nil)
)

// The volume transaction lock (docs/SHARED.md, 9.2): a locked batch is a
// PostgreSQL transaction on a connection of its own that holds
// pg_advisory_xact_lock of the volume from its start to its COMMIT, so
// that the volume's transactions run one at a time across every host that
// has it open, each seeing all earlier ones. Its reads go through the
// store as a batch's do (under the lock nobody else commits), its writes
// to an overlay, and its Commit sends the writes, a notification to the
// volume's channel and COMMIT in one round trip; the lock ends with the
// transaction, on the server, also when the connection is lost.

// ErrSessionLost is returned by LockedBatch once this store's session
// row is gone: another host judged the session dead (its heartbeat
// stopped for the lease time) and may have cleaned up what it held, so it
// must not write any more; unmounting and mounting again starts a new
// session.
var ErrSessionLost = errors.New("this host's session was ended by another host (it looked dead); unmount and mount again")

// LockedBatch implements meta.TxLocker: it takes the volume's
// transaction lock and, in the same round trip, checks that this store's
// session still exists and reads keys (bypassing the record cache:
// another host may have written them).
func (s *Store) LockedBatch(keys ...[]byte) (meta.Batch, [][]byte, error) {
	var lb *lockedBatch
	var vals [][]byte
	defer func(start time.Time) { s.lockWait.Add(int64(time.Since(start))) }(time.Now())
	if err := s.guard.failure(); err != nil {
		return nil, nil, err
	}
	if s.sess != nil {
		select {
		case <-s.sess.lost:
			return nil, nil, ErrSessionLost
		default:
		}
	}
	err := s.r.again(func() (err error) {
		lb, vals, err = s.beginLocked(keys)
		if guardTripped(err) { // the server recovered from a crash: so does the store
			if err = s.recoverFromCrash(); errors.Is(err, errEpochTaken) {
				lb, vals, err = s.beginLocked(keys)
			}
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("pgstore: volume transaction lock: %w", err)
	}
	return lb, vals, nil
}

// beginLocked begins a locked batch on a connection of its own and reads
// keys.
func (s *Store) beginLocked(keys [][]byte) (*lockedBatch, [][]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	vals, foreign, err := s.lockOn(ctx, conn, keys)
	if err != nil {
		conn.Release() // the pool drops a connection left in a transaction
		return nil, nil, err
	}
	return &lockedBatch{batch: s.newBatch(), conn: conn, foreign: foreign}, vals, nil
}

// lockOn begins the transaction on conn, takes the lock and reads keys
// and, with the change log on, what other hosts changed since this store
// last looked (else foreign is All).
func (s *Store) lockOn(ctx context.Context, conn *pgxpool.Conn, keys [][]byte) (vals [][]byte, foreign meta.Changes, err error) {
	foreign.All = true
	tracking := s.ch.on.Load()
	pb := &pgx.Batch{}
	pb.Queue("BEGIN")
	pb.Queue(s.q.txLock)
	// The crash guard (async.go): nothing is read from a server that
	// recovered from a crash before the store recovered too (replay.go).
	pb.Queue(s.q.guard, s.guard.epoch.Load())
	id := s.SessionID()
	pb.Queue(s.q.sessionExists, id)
	pb.Queue(s.q.getMany, keys)
	if tracking {
		s.queueChangesSince(pb)
	}
	br := conn.SendBatch(ctx, pb)
	defer br.Close()
	for range 3 {
		if _, err := br.Exec(); err != nil {
			return nil, foreign, err
		}
	}
	var exists bool
	if err := br.QueryRow().Scan(&exists); err != nil {
		return nil, foreign, err
	}
	if id != 0 && !exists {
		return nil, foreign, ErrSessionLost
	}
	rows, err := br.Query()
	if err != nil {
		return nil, foreign, err
	}
	found := map[string][]byte{}
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			rows.Close()
			return nil, foreign, err
		}
		if v == nil {
			v = []byte{}
		}
		found[string(k)] = v
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, foreign, err
	}
	vals = make([][]byte, len(keys))
	for i, k := range keys {
		vals[i] = found[string(k)]
	}
	if tracking {
		rows, err := br.Query()
		if err != nil {
			return nil, foreign, err
		}
		changed, err := readChanges(rows)
		if err != nil {
			return nil, foreign, err
		}
		s.applyChanges(changed)
	}
	if err := br.Close(); err != nil {
		return nil, foreign, err
	}
	if tracking {
		foreign = s.ch.takePending()
	}
	return vals, foreign, nil
}

// DropCaches implements meta.CacheDropper: another host committed. With
// the change log, what it changed is read and dropped; without, the
// record cache is emptied.
func (s *Store) DropCaches() {
	if s.ch.on.Load() {
		s.syncChanges()
		return
	}
	s.resetCache()
}

// resetCache empties the record cache.
func (s *Store) resetCache() {
	if s.cache != nil {
		s.cache.mu.Lock()
		s.cache.resetLocked()
		s.cache.mu.Unlock()
	}
}

// lockedBatch is a batch whose Commit commits the transaction that holds
// the volume's transaction lock.
type lockedBatch struct {
	batch
	conn      *pgxpool.Conn // nil once committed or closed
	committed bool          // COMMIT went through: nothing to roll back
	foreign   meta.Changes  // what other hosts changed since this host last looked
}

// ForeignChanges implements meta.ForeignChanges: what the change log
// said other hosts changed, or All without the log.
func (b *lockedBatch) ForeignChanges() meta.Changes { return b.foreign }

// Commit sends the writes, the notification and COMMIT in one round
// trip. Whatever the outcome, the lock is released: by COMMIT, or by the
// rollback of a failed transaction (the connection is closed if its state
// is unknown). A commit whose connection was lost after it was sent may
// have committed: that error is returned as it is (docs/SHARED.md,
// section 6), and the record cache is emptied.
func (b *lockedBatch) Commit(sync bool) error {
	if b.done || b.conn == nil {
		return errClosed
	}
	defer b.release()
	if err := b.s.guard.failure(); err != nil {
		return err
	}
	w, pb, markAt := b.statements(true, sync)
	pb.Queue(b.s.q.notify, b.s.SessionID())
	pb.Queue("COMMIT")
	if b.s.cache != nil {
		b.s.cache.begin(w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.s.timeout)
	defer cancel()
	err := b.s.commitOn(sync, true, w, func() (int64, error) {
		return b.s.sendCommit(ctx, b.conn, pb, markAt)
	})
	err = b.s.afterCommit(err)
	if fn := b.s.committed.Load(); err == nil && fn != nil {
		(*fn)()
	}
	if b.s.cache != nil {
		b.s.cache.end(w, err)
	}
	if err != nil {
		return err
	}
	b.done, b.committed = true, true
	return nil
}

// OnCommitted makes fn (nil: nothing) run whenever a locked batch of s
// has committed, before its writes reach the record cache: the lock is
// free by then, so another host may commit, and be heard of, in that
// moment. For tests, which land such a commit there.
func (s *Store) OnCommitted(fn func()) {
	if fn == nil {
		s.committed.Store(nil)
		return
	}
	s.committed.Store(&fn)
}

// Close rolls the transaction back unless it committed, releasing the
// lock.
func (b *lockedBatch) Close() error {
	b.release()
	return b.batch.Close()
}

// release ends the transaction (a rollback, if it is still open) and
// gives the connection back; a connection whose state is unknown is
// closed instead, which ends the transaction on the server too.
func (b *lockedBatch) release() {
	if b.conn == nil {
		return
	}
	conn := b.conn
	b.conn = nil
	ctx, cancel := context.WithTimeout(context.Background(), b.s.timeout)
	defer cancel()
	if !b.committed {
		if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
			conn.Conn().Close(context.Background())
		}
	}
	conn.Release()
}
