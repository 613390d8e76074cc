package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/doppelfs/doppel/internal/meta"
)

// Commits that wait for no fsync, and the crash guard (docs/SHARED.md,
// "Commits without a WAL flush").
//
// A batch committed without sync does not wait for PostgreSQL to flush its
// WAL (synchronous_commit off for that transaction alone). It is visible to
// every session at once and survives the daemon being killed, as a Pebble
// commit written to the OS does (meta.Batch's contract), and PostgreSQL's
// WAL writer makes it durable within a fraction of a second. Sync (fsync,
// the periodic sync, the reclaimer before it punches) flushes the WAL with
// one synchronous commit; a commit with sync is synchronous, and flushes
// every commit before it too.
//
// What that changes is a crash of the server itself: it loses the commits
// its WAL writer had not flushed yet, while the daemon runs on with caches,
// statistics and free lists that include them. The guard catches it.
// The changes table is UNLOGGED, so crash recovery empties it (a clean
// shutdown keeps it), and its row of version 0 holds an epoch (changes.go).
// Every commit checks, inside its own transaction, that the row still
// holds the epoch this store last saw, and aborts otherwise; so no commit
// made after a crash lands on state built from commits the crash lost.
// When the guard trips, the store sends again the commits of its own the
// crash lost (replay.go), takes the new epoch and empties its record
// cache; an unlocked batch is then sent again, unless the store sent
// lost commits again since the batch began (what it read may have been
// the state without them).

// ErrLostCommits: PostgreSQL went through crash recovery after this store
// committed without waiting for the WAL flush, and the commits it lost
// cannot be sent again (replay.go).
var ErrLostCommits = errors.New("PostgreSQL recovered from a crash and lost metadata commits this host made since its last sync, which other hosts may have built on")

// errEpochTaken: the guard tripped; the store recovered and took the new
// epoch, and the commit can be sent again.
var errEpochTaken = errors.New("PostgreSQL recovered from a crash since this store last looked; the commit was not applied")

// crashGuard is what a store knows of its commits' durability.
type crashGuard struct {
	epoch atomic.Int64 // the epoch of the changes table's row of version 0, as last seen
	owner int64        // the key of this store's marker row (random per Open)
	// gate orders commits and flushes (shared) against recovery
	// (exclusive), which must see every commit that returned kept, and
	// send the lost ones again before any other commit lands.
	gate sync.RWMutex
	// issued counts the commits without sync that returned success. One
	// that failed, its outcome unknown (a connection lost), is not kept:
	// its caller already takes it as maybe landed, maybe not.
	issued  atomic.Int64
	flushed atomic.Int64 // how many of issued a flush is known to cover
	// flushedSeen is the change log's version seen when the last flush
	// began (changes.go): what other hosts committed up to it is durable.
	flushedSeen atomic.Int64
	failed      atomic.Pointer[error]
	replays     atomic.Int64 // commits sent again after a crash lost them

	mu       sync.Mutex  // guards log
	log      []unflushed // the commits issued and not flushed, in the order they returned
	logBytes atomic.Int64
}

// failure is the store's failure (ErrLostCommits), nil if it has none.
func (g *crashGuard) failure() error {
	if p := g.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// guardStatements queues, right after a commit's nextval, the check of the
// epoch (s.q.guard: count(*) is 0 when the row is gone or holds another
// epoch, and the division by zero aborts the transaction) and the commit's
// synchronous_commit, for it alone: off without sync; with sync, on where
// the server has it off (a server set so for speed would otherwise make
// an fsync a promise it does not keep), else as the server has it (say,
// remote_apply).
func (s *Store) guardStatements(pb *pgx.Batch, sync bool) {
	pb.Queue(s.q.guard, s.guard.epoch.Load())
	if sync {
		pb.Queue(flushedCommit)
	} else {
		pb.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	}
}

// queueMark queues, for a commit without sync, the count in the marker
// row (replay.go), and returns its place in pb (-1 with sync). Last in
// the transaction, so that the row's lock is held as briefly as can be.
func (s *Store) queueMark(pb *pgx.Batch, sync bool) int {
	if sync {
		return -1
	}
	pb.Queue(s.q.markBump, s.guard.owner)
	return pb.Len() - 1
}

// flushedCommit makes the transaction's commit wait for the WAL flush.
const flushedCommit = `SELECT set_config('synchronous_commit', 'on', true) WHERE current_setting('synchronous_commit') = 'off'`

// guardTripped says whether err is the guard's abort.
func guardTripped(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "22012" // division_by_zero: no statement of ours divides otherwise
}

// commitOn runs send, a commit's round trip (sync or not; locked: under
// the transaction lock) on a connection the caller holds, which returns
// its count in the marker row, under the gate, and accounts for it: a
// commit without sync is kept until a flush covers it, one with sync
// covers those that returned before it was sent. The connection is taken
// before the gate: taking a new one may recover the store (replay.go),
// which needs the gate to itself.
func (s *Store) commitOn(sync, locked bool, w commitWrites, send func() (int64, error)) error {
	g := &s.guard
	g.gate.RLock()
	defer g.gate.RUnlock()
	issued := g.issued.Load()
	mark, err := send()
	switch {
	case err != nil:
	case sync:
		g.coverFlushed(issued)
	default:
		g.record(mark, locked, w)
	}
	return err
}

// afterCommit finishes a commit that returned err: a tripped guard
// recovers the store (errEpochTaken once it can commit again), and too
// many commits kept unflushed are flushed.
func (s *Store) afterCommit(err error) error {
	if guardTripped(err) {
		return s.recoverFromCrash()
	}
	if err == nil && s.guard.logBytes.Load() > maxUnflushedBytes {
		s.SyncAll() // a failure is the next Sync's to report
	}
	return err
}

// takeEpoch writes the changes table's row of version 0 if it is missing
// (a new volume, or a crash emptied the table) and takes its epoch.
func (s *Store) takeEpoch() error {
	return s.retry(func(ctx context.Context) error { return s.takeEpochOn(ctx, s.pool) })
}

// execQuerier is a connection or the pool.
type execQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// takeEpochOn is takeEpoch on c.
func (s *Store) takeEpochOn(ctx context.Context, c execQuerier) error {
	var epoch int64
	if _, err := c.Exec(ctx, s.q.changesSentinel, newEpoch()); err != nil {
		return err
	}
	if err := c.QueryRow(ctx, s.q.epochNow).Scan(&epoch); err != nil {
		return err
	}
	s.guard.epoch.Store(epoch)
	return nil
}

// Sync flushes PostgreSQL's WAL if this store committed without sync
// since the last flush, or, with several hosts, read of other hosts'
// commits in the change log (what it learnt from them may decide what it
// frees): one synchronous commit, which flushes the WAL up to its own
// commit record and so every commit before it. The commit must write to
// the WAL, or PostgreSQL skips the flush (a transaction that only took an
// id does): it writes the time of the store's marker row. Its
// guard recovers the store if the server crashed since (replay.go).
func (s *Store) Sync() error {
	if err := s.guard.failure(); err != nil {
		return err
	}
	if s.guard.issued.Load() == s.guard.flushed.Load() && s.seenVersion() == s.guard.flushedSeen.Load() {
		return nil
	}
	return s.SyncAll()
}

var _ meta.AllSyncer = (*Store)(nil)

// SyncAll implements meta.AllSyncer: it flushes the WAL whatever this
// store committed, so that every commit any host made before the call
// is durable when it returns (the orphan sweep, which frees what no
// record names, needs the records it read to be durable).
func (s *Store) SyncAll() error {
	if err := s.guard.failure(); err != nil {
		return err
	}
	seen := s.seenVersion()
	err := s.flush()
	if guardTripped(err) {
		// A failure, or the store recovered: then the flush goes again.
		if err = s.recoverFromCrash(); errors.Is(err, errEpochTaken) {
			err = s.flush()
		}
	}
	if err != nil {
		return fmt.Errorf("pgstore: flush the WAL: %w", err)
	}
	s.guard.flushedSeen.Store(seen)
	return nil
}

// flush sends the guarded synchronous commit that flushes the WAL (its
// write: the marker row's time), and forgets the commits it covers.
func (s *Store) flush() error {
	g := &s.guard
	return s.retry(func(ctx context.Context) error {
		conn, err := s.pool.Acquire(ctx) // before the gate: commitOn
		if err != nil {
			return err
		}
		defer conn.Release()
		g.gate.RLock()
		defer g.gate.RUnlock()
		n := g.issued.Load()
		pb := &pgx.Batch{}
		pb.Queue(s.q.guard, g.epoch.Load())
		pb.Queue(flushedCommit)
		pb.Queue(s.q.markTouch, g.owner)
		if err := conn.SendBatch(ctx, pb).Close(); err != nil {
			return err
		}
		g.coverFlushed(n)
		return nil
	})
}

// flushBehind flushes, every interval, what this store committed without
// sync since the last flush. PostgreSQL's WAL writer makes such commits
// durable within three of its wal_writer_delay (200 ms by default) anyway,
// but only a flush tells the store so, and lets it forget them. So a
// crash of the server finds at most about this interval of commits kept
// in memory to send again, not the 5 s of the periodic sync.
func (s *Store) flushBehind(every time.Duration) {
	defer close(s.flushDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.flushStop:
			return
		case <-t.C:
		}
		if s.Unflushed() {
			s.Sync() // a failure waits for the next tick, or the next Sync, which returns it
		}
	}
}

// Unflushed says whether commits without sync wait for a flush that
// would tell the store they are durable.
func (s *Store) Unflushed() bool { return s.guard.issued.Load() != s.guard.flushed.Load() }

// seenVersion is the highest version of other hosts' commits this store
// read in the change log (0 with the log off).
func (s *Store) seenVersion() int64 {
	s.ch.mu.Lock()
	defer s.ch.mu.Unlock()
	return s.ch.seen
}
