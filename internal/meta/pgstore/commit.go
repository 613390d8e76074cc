package pgstore

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Commit applies the batch in one round trip: the statements go out as
// one pipeline with a single Sync, which PostgreSQL runs as one implicit
// transaction, so all of it commits or none. It takes the next volume
// version from the sequence and stamps every row it writes with it, and
// notifies the volume's channel (delivered only if it commits: other
// hosts drop what they cache; docs/SHARED.md, 9.3).
//
// With sync it waits for the WAL's flush (synchronous_commit as the
// server has it, on by default); without, it does not, and the next Sync
// flushes it (async.go). A commit the crash guard stopped because the
// server recovered from a crash is sent once more after the store
// recovered, unless the store sent lost commits again since the batch
// began: its reads may then have missed them (replay.go).
func (b *batch) Commit(sync bool) error {
	if b.done {
		return errClosed
	}
	if b.ov.empty() {
		b.done = true
		return nil
	}
	if err := b.s.guard.failure(); err != nil {
		return err
	}
	err := b.send(sync)
	if errors.Is(err, errEpochTaken) && b.s.guard.replays.Load() == b.replays {
		err = b.send(sync)
	}
	if err != nil {
		return err
	}
	b.done = true
	return nil
}

// send sends the batch's commit, retried on conflicts.
func (b *batch) send(sync bool) error {
	w, pb, markAt := b.statements(false, sync)
	pb.Queue(b.s.q.notify, b.s.SessionID())
	if b.s.cache != nil {
		b.s.cache.begin(w)
	}
	err := b.s.retry(func(ctx context.Context) error {
		conn, err := b.s.pool.Acquire(ctx) // before the gate: commitOn
		if err != nil {
			return err
		}
		defer conn.Release()
		return b.s.commitOn(sync, false, w, func() (int64, error) {
			return b.s.sendCommit(ctx, conn, pb, markAt)
		})
	})
	err = b.s.afterCommit(err)
	if b.s.cache != nil {
		b.s.cache.end(w, err)
	}
	return err
}

// statements are the batch's writes as a pipeline: the next volume
// version first, the crash guard (and, without sync, synchronous_commit
// off: async.go), then the deleted ranges, the deleted keys and the
// upserts (in key order), for a batch that holds the transaction lock
// (locked) with the change log on its row, and without sync the count
// in the store's marker row, whose place it returns (-1: none; replay.go).
// Batches without the lock write only records that are this host's own or
// that other hosts read past the cache (journal cursors and pruning, the
// dead-span ledger, the crash marker): they are not logged, and must not
// take the lock, which a transaction of this host may hold while it waits
// for them.
func (b *batch) statements(locked, sync bool) (commitWrites, *pgx.Batch, int) {
	q := b.s.q
	pb := &pgx.Batch{}
	pb.Queue(q.nextval)
	b.s.guardStatements(pb, sync)
	dels, keys, vals := b.ov.writes()
	w := commitWrites{ranges: b.ov.ranges, dels: dels, keys: keys, vals: vals}
	b.s.queueWrites(pb, w)
	if locked && b.s.ch.on.Load() {
		ks, rs := changeArgs(w)
		pb.Queue(q.changesAdd, b.s.SessionID(), ks, rs)
	}
	return w, pb, b.s.queueMark(pb, sync)
}

// queueWrites queues a commit's writes: its deleted ranges, its deleted
// keys, its upserts.
func (s *Store) queueWrites(pb *pgx.Batch, w commitWrites) {
	for _, r := range w.ranges {
		if r.hi == nil {
			pb.Queue(s.q.delFrom, r.lo)
		} else {
			pb.Queue(s.q.delRange, r.lo, r.hi)
		}
	}
	if len(w.dels) > 0 {
		pb.Queue(s.q.delKeys, w.dels)
	}
	if len(w.keys) > 0 {
		pb.Queue(s.q.upsert, w.keys, w.vals)
	}
}

// batchSender sends a pipeline: the pool or one connection.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// sendCommit runs a commit's pipeline pb (nextval first, whose result it
// records as the latest version this store took) on to, and returns the
// count the statement at markAt returned (0 with markAt -1).
func (s *Store) sendCommit(ctx context.Context, to batchSender, pb *pgx.Batch, markAt int) (int64, error) {
	br := to.SendBatch(ctx, pb)
	var ver, mark int64
	if err := br.QueryRow().Scan(&ver); err != nil {
		br.Close()
		return 0, err
	}
	for i := 1; i < pb.Len(); i++ {
		var err error
		if i == markAt {
			err = br.QueryRow().Scan(&mark)
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			br.Close()
			return 0, err
		}
	}
	if err := br.Close(); err != nil {
		return 0, err
	}
	s.sawVersion(ver)
	return mark, nil
}

// maxAttempts bounds the tries of a commit that keeps conflicting.
const maxAttempts = 12

// retry runs fn until it succeeds or fails with an error that is not a
// serialization failure or a deadlock (PostgreSQL rolled the transaction
// back: running it again is safe), nor a lost connection before anything
// was sent, sleeping a little longer, with jitter, after each. A
// connection lost after the commit was sent is returned: whether it
// committed is unknown (docs/SHARED.md, section 6).
func (s *Store) retry(fn func(context.Context) error) error {
	var err error
	for attempt := range maxAttempts {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		err = fn(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if connLost(err) {
			s.pool.Reset()
			if !pgconn.SafeToRetry(err) {
				return err
			}
		} else if !retryable(err) {
			return err
		}
		s.retries.Add(1)
		backoff := time.Duration(1<<min(attempt, 7)) * time.Millisecond
		time.Sleep(backoff/2 + rand.N(backoff))
	}
	return err
}

// retryable says whether err is a conflict that running the transaction
// again resolves.
func retryable(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return pe.Code == "40001" || pe.Code == "40P01" // serialization_failure, deadlock_detected
}

// connLost says whether err is the connection's (lost, refused, reset,
// the server shutting down) rather than the statement's. Timeouts are
// not: the caller's bound already passed.
func connLost(err error) bool {
	var rp recoveryPending
	if errors.As(err, &rp) { // a new connection waits for a recovery from a crash
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P01", "57P02", "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
			return true
		}
		return strings.HasPrefix(pe.Code, "08") // connection_exception
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) && !ne.Timeout() ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED)
}
