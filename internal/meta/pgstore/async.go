package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
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
// statistics and free lists that include them. The guard makes that loud.
// The changes table is UNLOGGED, so crash recovery empties it (a clean
// shutdown keeps it), and its row of version 0 holds an epoch (changes.go).
// Every commit checks, inside its own transaction, that the row still
// holds the epoch this store last saw, and aborts otherwise; so no commit
// made after a crash lands on state built from commits the crash lost.
// When the guard trips:
//   - if this store committed without sync since its last flush, those
//     commits may be lost: the store fails (ErrLostCommits). Every later
//     commit and Sync returns that error, reads go on, and mounting again
//     starts from what PostgreSQL kept, as after a crash of the daemon;
//   - otherwise nothing of its own was lost: it takes the new epoch and
//     empties its record cache (another host's lost commits may be in it),
//     and an unlocked batch is sent again.

// ErrLostCommits: PostgreSQL went through crash recovery after this store
// committed without waiting for the WAL flush, so those commits may be gone.
var ErrLostCommits = errors.New("PostgreSQL recovered from a crash and may have lost metadata commits this host made since its last sync")

// errEpochTaken: the guard tripped with nothing of this store's at risk;
// the store took the new epoch, and the commit can be sent again.
var errEpochTaken = errors.New("PostgreSQL recovered from a crash since this store last looked; the commit was not applied")

// crashGuard is what a store knows of its commits' durability.
type crashGuard struct {
	epoch atomic.Int64 // the epoch of the changes table's row of version 0, as last seen
	// issued counts the commits without sync that returned success. One
	// that failed, its outcome unknown (a connection lost), is not at
	// risk: its caller already takes it as maybe landed, maybe not.
	issued  atomic.Int64
	flushed atomic.Int64 // how many of issued a flush is known to cover
	// flushedSeen is the change log's version seen when the last flush
	// began (changes.go): what other hosts committed up to it is durable.
	flushedSeen atomic.Int64
	failed      atomic.Pointer[error]
}

// failure is the store's failure (ErrLostCommits), nil if it has none.
func (g *crashGuard) failure() error {
	if p := g.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// coverFlushed records that a flush started once issued was n covers them.
func (g *crashGuard) coverFlushed(n int64) {
	for {
		old := g.flushed.Load()
		if n <= old || g.flushed.CompareAndSwap(old, n) {
			return
		}
	}
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

// flushedCommit makes the transaction's commit wait for the WAL flush.
const flushedCommit = `SELECT set_config('synchronous_commit', 'on', true) WHERE current_setting('synchronous_commit') = 'off'`

// guardTripped says whether err is the guard's abort.
func guardTripped(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "22012" // division_by_zero: no statement of ours divides otherwise
}

// settle accounts for a commit (sync or not; issuedBefore: the count of
// commits without sync when it was sent) that returned err, and turns a
// tripped guard into the store's failure or errEpochTaken.
func (s *Store) settle(sync bool, issuedBefore int64, err error) error {
	if guardTripped(err) {
		return s.tripped()
	}
	switch {
	case err != nil:
	case sync:
		s.guard.coverFlushed(issuedBefore)
	default:
		s.guard.issued.Add(1)
	}
	return err
}

// tripped handles a tripped guard: a failure if commits of this store
// may be lost, else the new epoch taken.
func (s *Store) tripped() error {
	if s.guard.issued.Load() > s.guard.flushed.Load() {
		err := fmt.Errorf("%w: %w", meta.ErrFailed, ErrLostCommits)
		if s.guard.failed.CompareAndSwap(nil, &err) {
			slog.Error("metadata store stopped: unmount and mount again", "component", "postgres", "schema", s.schema, "err", ErrLostCommits)
		}
		return s.guard.failure()
	}
	if err := s.takeEpoch(); err != nil {
		return fmt.Errorf("%w; reading the new epoch: %w", errEpochTaken, err)
	}
	s.lostTrack()
	slog.Warn("PostgreSQL recovered from a crash; nothing this host committed was at risk, its record cache is emptied", "component", "postgres", "schema", s.schema)
	return errEpochTaken
}

// takeEpoch writes the changes table's row of version 0 if it is missing
// (a new volume, or a crash emptied the table) and takes its epoch.
func (s *Store) takeEpoch() error {
	var epoch int64
	err := s.retry(func(ctx context.Context) error {
		if _, err := s.pool.Exec(ctx, s.q.changesSentinel, newEpoch()); err != nil {
			return err
		}
		return s.pool.QueryRow(ctx, s.q.changesEpoch).Scan(&epoch)
	})
	if err != nil {
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
// id does): it inserts a row of its own and deletes it again, which no
// other transaction ever sees. Its guard fails the store if the server
// crashed since this store's commits (they may be lost).
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
	n, seen := s.guard.issued.Load(), s.seenVersion()
	err := s.flush()
	if guardTripped(err) {
		// A failure, or the new epoch taken: then the flush goes again.
		if err = s.tripped(); errors.Is(err, errEpochTaken) {
			err = s.flush()
		}
	}
	if err != nil {
		return fmt.Errorf("pgstore: flush the WAL: %w", err)
	}
	s.guard.coverFlushed(n)
	s.guard.flushedSeen.Store(seen)
	return nil
}

// flush sends the guarded synchronous commit that flushes the WAL.
func (s *Store) flush() error {
	return s.retry(func(ctx context.Context) error {
		pb := &pgx.Batch{}
		pb.Queue(s.q.guard, s.guard.epoch.Load())
		pb.Queue(flushedCommit)
		key := fmt.Appendf(nil, "\xff\xffdoppel flush %016x", rand.Uint64())
		pb.Queue(s.q.flushIns, key)
		pb.Queue(s.q.flushDel, key)
		return s.pool.SendBatch(ctx, pb).Close()
	})
}

// flushBehind flushes, every interval, what this store committed without
// sync since the last flush. PostgreSQL's WAL writer makes such commits
// durable within three of its wal_writer_delay (200 ms by default) anyway,
// but only a flush tells the store so; a crash of the server stops the
// store only if commits it did not know durable may be lost. So a crash
// stops a mount only within about this interval of its writes, not the 5
// s of the periodic sync.
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
		if s.guard.issued.Load() != s.guard.flushed.Load() {
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
