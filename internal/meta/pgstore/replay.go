package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/doppelfs/doppel/internal/meta"
)

// Sending again what a crash of the server lost (docs/SHARED.md, section
// 2, "Commits without a WAL flush").
//
// A commit without sync that returned is kept in memory, with its writes,
// until a flush covers it. Each also counts itself in the store's marker
// row (schema.go, markBump), under that row's lock, so the store's commits
// take the counts in the order of their commit records in the WAL. A
// crash's recovery replays a prefix of the WAL: reading the marker back
// tells exactly which of the store's commits survived (count at or below
// it) and which were lost (above). The lost ones are sent again, in order,
// in one synchronous transaction, before any other commit of the store and
// before the store takes the new epoch, so the volume is again what the
// daemon holds in memory, and the mount goes on. Only where that would not
// be sound does the store fail: a lost commit that held the volume's
// transaction lock while other hosts write the volume (they may have built
// on it, or committed in its place).

// maxUnflushedBytes bounds the writes kept for commits not yet flushed:
// past it a commit flushes at once instead of waiting for the flush behind.
var maxUnflushedBytes int64 = 64 << 20

// unflushed is a commit without sync that returned, until a flush covers it.
type unflushed struct {
	seq    int64 // its place among the store's commits that returned (crashGuard.issued)
	mark   int64 // the count it set in the marker row
	locked bool  // it held the volume's transaction lock
	w      commitWrites
	bytes  int64 // about what it keeps in memory (sizeOf)
}

// sizeOf is about what keeping w costs in memory.
func sizeOf(w commitWrites) int64 {
	n := 64
	for _, r := range w.ranges {
		n += len(r.lo) + len(r.hi)
	}
	for _, k := range w.dels {
		n += len(k) + 24
	}
	for i, k := range w.keys {
		n += len(k) + len(w.vals[i]) + 48
	}
	return int64(n)
}

// record keeps a commit without sync that returned (mark: its count in
// the marker row).
func (g *crashGuard) record(mark int64, locked bool, w commitWrites) {
	g.mu.Lock()
	defer g.mu.Unlock()
	u := unflushed{seq: g.issued.Add(1), mark: mark, locked: locked, w: w, bytes: sizeOf(w)}
	g.log = append(g.log, u)
	g.logBytes.Add(u.bytes)
}

// coverFlushed records that a flush started once issued was n covers the
// commits up to it, and forgets them.
func (g *crashGuard) coverFlushed(n int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n <= g.flushed.Load() {
		return
	}
	g.flushed.Store(n)
	i := 0
	for i < len(g.log) && g.log[i].seq <= n {
		g.logBytes.Add(-g.log[i].bytes)
		i++
	}
	g.log = slices.Delete(g.log, 0, i)
}

// lostAbove returns the kept commits whose count is above mark, in the
// order of their counts (of their commits in the WAL).
func (g *crashGuard) lostAbove(mark int64) []unflushed {
	g.mu.Lock()
	defer g.mu.Unlock()
	var lost []unflushed
	for _, u := range g.log {
		if u.mark > mark {
			lost = append(lost, u)
		}
	}
	slices.SortFunc(lost, func(a, b unflushed) int { return cmp.Compare(a.mark, b.mark) })
	return lost
}

// forgetAll forgets every kept commit: all are durable.
func (g *crashGuard) forgetAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.flushed.Store(g.issued.Load())
	g.log, _ = nil, g.logBytes.Swap(0)
}

// recoverFromCrash handles a crash of the server, found by a tripped
// guard or on a new connection (checkNewConn). Under the gate (no commit
// of the store in flight), unless another caller recovered already, it
// reads the epoch and the marker row, sends again the commits the crash
// lost, takes the new epoch and empties the record cache (another host's
// lost commits may be in it). It returns errEpochTaken once the store can
// commit again, the store's failure where it cannot go on, or the error
// that stopped it (the next commit or new connection tries again). It
// works on a connection of its own, not the pool's: every new connection
// of the pool checks the epoch first, and would wait for this recovery.
func (s *Store) recoverFromCrash() error {
	g := &s.guard
	g.gate.Lock()
	defer g.gate.Unlock()
	if err := g.failure(); err != nil {
		return err
	}
	err := s.retry(func(ctx context.Context) error {
		c, err := pgx.ConnectConfig(ctx, s.connCfg)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		return s.recoverOn(ctx, c)
	})
	if errors.Is(err, errEpochTaken) || g.failure() != nil {
		return err
	}
	return fmt.Errorf("pgstore: PostgreSQL recovered from a crash; recovering from it: %w", err)
}

// recoverOn is recoverFromCrash's work on c.
func (s *Store) recoverOn(ctx context.Context, c *pgx.Conn) error {
	g := &s.guard
	var epoch, mark int64
	if err := c.QueryRow(ctx, s.q.epochNow).Scan(&epoch); err != nil {
		return err
	}
	if epoch == g.epoch.Load() {
		return errEpochTaken // another caller recovered meanwhile
	}
	if err := c.QueryRow(ctx, s.q.markRead, g.owner).Scan(&mark); err != nil {
		return err
	}
	lost := g.lostAbove(mark)
	if len(lost) > 0 && s.ch.on.Load() && slices.ContainsFunc(lost, func(u unflushed) bool { return u.locked }) {
		err := fmt.Errorf("%w: %w", meta.ErrFailed, ErrLostCommits)
		if g.failed.CompareAndSwap(nil, &err) {
			slog.Error("metadata store stopped: unmount and mount again", "component", "postgres", "schema", s.schema, "lost", len(lost), "err", ErrLostCommits)
		}
		return g.failure()
	}
	if len(lost) > 0 {
		if err := s.replay(ctx, c, lost); err != nil {
			return fmt.Errorf("sending again the %d commits of this host it lost: %w", len(lost), err)
		}
		g.replays.Add(int64(len(lost)))
	}
	if err := s.takeEpochOn(ctx, c); err != nil {
		return fmt.Errorf("taking the new epoch: %w", err)
	}
	// What survived came back from the WAL on disk, the replay was a
	// synchronous commit: nothing the store kept is at risk any more.
	g.forgetAll()
	s.lostTrack()
	if len(lost) > 0 {
		slog.Warn("PostgreSQL recovered from a crash that lost commits of this host; they were sent again, and the record cache is emptied", "component", "postgres", "schema", s.schema, "sent_again", len(lost))
	} else {
		slog.Warn("PostgreSQL recovered from a crash; nothing this host committed was lost, the record cache is emptied", "component", "postgres", "schema", s.schema)
	}
	return errEpochTaken
}

// replay sends the lost commits again on c, in order, as one synchronous
// transaction that also raises the marker row past them (a replay whose
// outcome is unknown is then not sent twice: the next recovery finds the
// marker at their counts). No guard: the store has no epoch to check yet,
// and the gate keeps its other commits out.
func (s *Store) replay(ctx context.Context, c *pgx.Conn, lost []unflushed) error {
	pb := &pgx.Batch{}
	pb.Queue(s.q.nextval)
	pb.Queue(flushedCommit)
	for _, u := range lost {
		s.queueWrites(pb, u.w)
	}
	pb.Queue(s.q.markSet, s.guard.owner, lost[len(lost)-1].mark)
	_, err := s.sendCommit(ctx, c, pb, -1)
	return err
}

// checkNewConn runs on every new connection of the pool before it is
// handed out: if the server went through crash recovery since the store
// took its epoch, the store recovers first, so that nothing reads the
// volume without the commits the crash lost, nor builds on such a read.
// (Every connection made before the crash died with it.)
func (s *Store) checkNewConn(ctx context.Context, c *pgx.Conn) error {
	g := &s.guard
	if g.epoch.Load() == 0 || g.failure() != nil { // not open yet, or failed: reads go on
		return nil
	}
	var epoch int64
	if err := c.QueryRow(ctx, s.q.epochNow).Scan(&epoch); err != nil {
		return err
	}
	if epoch == g.epoch.Load() {
		return nil
	}
	if err := s.recoverFromCrash(); err != nil && !errors.Is(err, errEpochTaken) && g.failure() == nil {
		return recoveryPending{err}
	}
	return nil
}

// recoveryPending is checkNewConn's error: the connection is not handed
// out, and taking one may be tried again (connLost).
type recoveryPending struct{ err error }

func (e recoveryPending) Error() string     { return e.err.Error() }
func (e recoveryPending) Unwrap() error     { return e.err }
func (e recoveryPending) SafeToRetry() bool { return true }

// Replays counts the commits this store sent again after a crash of the
// server lost them.
func (s *Store) Replays() int64 { return s.guard.replays.Load() }
