package pgstore

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/doppelfs/doppel/internal/meta"
)

// The change log (docs/SHARED.md, 9.2). With several hosts, every
// transaction (a commit under the volume's transaction lock) also records
// the keys and ranges it wrote, under its version, in the volume's
// changes table; the lock makes versions commit in order, so a host that
// read the log up to version N missed none below. A host reads the
// log from the last version it saw, in the round trip that takes the
// lock (and when the listener reports commits), and drops from its
// record cache only what other hosts changed, instead of all of it; the
// layers above learn the same (meta.ForeignChanges) and keep what no
// change touched (pins, the clone flag, chunks this host created). Rows
// older than changesKeep are pruned; a host that did not read the log for
// changesStale (so may have missed pruned rows) empties its cache.
//
// The table is UNLOGGED: writing its rows to the WAL cost a quarter of a
// small file's create; the log is worth keeping only while the hosts run.
// PostgreSQL empties an unlogged table when it recovers from a crash, so
// the log has an epoch, a random number in its row of version 0: a host
// that finds the row gone, or another epoch in it, empties its cache and
// takes everything as changed, and the row is written again (with a new
// epoch) by the next heartbeat.

const (
	changesKeep       = time.Hour
	changesStale      = 30 * time.Minute
	changesPruneEvery = 5 * time.Minute
)

var _ meta.ForeignChanges = (*lockedBatch)(nil)

// changeLog is what this store knows of the log.
type changeLog struct {
	on     atomic.Bool
	mu     sync.Mutex
	seen   int64     // the highest version applied to the cache
	readAt time.Time // when the log was last read
	pruned time.Time // when this host last pruned it
	epoch  int64     // the log's epoch this store follows (0: the row was missing)
	// pending is what other hosts changed since the last locked batch
	// took it: the listener's reads between transactions land here too.
	pending meta.Changes
}

// maxPendingKeys bounds pending; past it, everything counts as changed.
const maxPendingKeys = 1 << 17

// addPending adds ch to pending. s.ch.mu is held.
func (l *changeLog) addPending(ch meta.Changes) {
	p := &l.pending
	if ch.All || p.All || len(p.Keys)+len(ch.Keys) > maxPendingKeys {
		*p = meta.Changes{All: true}
		return
	}
	p.Keys = append(p.Keys, ch.Keys...)
	p.Ranges = append(p.Ranges, ch.Ranges...)
}

// takePending returns pending and clears it.
func (l *changeLog) takePending() meta.Changes {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.pending
	l.pending = meta.Changes{}
	return p
}

// lostTrack empties the cache and makes the next locked batch take
// everything as changed: the log could not be read.
func (s *Store) lostTrack() {
	s.ch.mu.Lock()
	s.ch.addPending(meta.Changes{All: true})
	s.ch.mu.Unlock()
	s.resetCache()
}

// TrackChanges turns the change log on for this store (several hosts):
// its commits record what they write, and what other hosts commit is read
// from the log. The record cache starts empty.
func (s *Store) TrackChanges() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	if _, err := s.pool.Exec(ctx, s.q.changesSentinel, newEpoch()); err != nil {
		return err
	}
	var last, epoch int64
	if err := s.pool.QueryRow(ctx, s.q.changesLast).Scan(&last); err != nil {
		return err
	}
	if err := s.pool.QueryRow(ctx, s.q.epochNow).Scan(&epoch); err != nil {
		return err
	}
	s.ch.mu.Lock()
	s.ch.seen, s.ch.readAt, s.ch.epoch = last, time.Now(), epoch
	s.ch.pending = meta.Changes{All: true}
	s.ch.on.Store(true)
	s.ch.mu.Unlock()
	s.resetCache()
	return nil
}

// changeRow is one row of the log.
type changeRow struct {
	ver, session int64
	keys, ranges [][]byte // ranges: lo, hi pairs (hi nil: no bound)
}

// queueChangesSince queues the read of the log past what this store saw.
func (s *Store) queueChangesSince(pb *pgx.Batch) {
	s.ch.mu.Lock()
	seen := s.ch.seen
	s.ch.mu.Unlock()
	pb.Queue(s.q.changesSince, seen)
}

// readChanges reads the rows of a changesSince query.
func readChanges(rows pgx.Rows) ([]changeRow, error) {
	defer rows.Close()
	var out []changeRow
	for rows.Next() {
		var r changeRow
		if err := rows.Scan(&r.ver, &r.session, &r.keys, &r.ranges); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// applyChanges drops from the cache what other sessions changed in rows
// (read with the log) and adds it to pending; rows this store applied
// before (a concurrent read) are skipped.
func (s *Store) applyChanges(rows []changeRow) {
	s.ch.mu.Lock()
	defer s.ch.mu.Unlock()
	var ch meta.Changes
	if time.Since(s.ch.readAt) > changesStale {
		ch.All = true
	}
	s.ch.readAt = time.Now()
	crashed := len(rows) == 0 || rows[0].ver != 0
	switch {
	case crashed:
		// The log was emptied (a crash of the server).
		ch.All, s.ch.epoch = true, 0
	case rows[0].session != s.ch.epoch:
		ch.All, s.ch.epoch, crashed = true, rows[0].session, true
	}
	if crashed {
		// The sequence may hand out again the versions of commits the
		// crash lost (their WAL went with them), and every row of the log
		// now came after the crash: none of it counts as seen.
		s.ch.seen = 0
	}
	own := s.SessionID()
	for _, r := range rows {
		if r.ver <= s.ch.seen {
			continue
		}
		s.ch.seen = r.ver
		if r.session == own && own != 0 {
			continue
		}
		ch.Keys = append(ch.Keys, r.keys...)
		for i := 0; i+1 < len(r.ranges); i += 2 {
			ch.Ranges = append(ch.Ranges, [2][]byte{r.ranges[i], r.ranges[i+1]})
		}
	}
	if s.cache != nil {
		if ch.All {
			s.resetCache()
		} else {
			s.cache.drop(ch.Keys, ch.Ranges)
		}
	}
	s.ch.addPending(ch)
}

// syncChanges reads the log and drops what other hosts changed from the
// cache; on failure the cache is emptied.
func (s *Store) syncChanges() {
	pb := &pgx.Batch{}
	s.queueChangesSince(pb)
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	br := s.pool.SendBatch(ctx, pb)
	rows, err := br.Query()
	var got []changeRow
	if err == nil {
		got, err = readChanges(rows)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.lostTrack()
		return
	}
	s.applyChanges(got)
}

// newEpoch returns a random epoch for the log's row of version 0.
func newEpoch() int64 { return rand.Int64N(1<<62) + 1 }

// changeArgs are the arguments of a commit's changesAdd: the keys it
// writes or deletes, and its deleted ranges as lo, hi pairs.
func changeArgs(w commitWrites) (keys, ranges [][]byte) {
	keys = make([][]byte, 0, len(w.dels)+len(w.keys))
	keys = append(append(keys, w.dels...), w.keys...)
	for _, r := range w.ranges {
		ranges = append(ranges, r.lo, r.hi)
	}
	if ranges == nil {
		ranges = [][]byte{}
	}
	return keys, ranges
}

// maintainChanges deletes rows older than changesKeep, at most every
// changesPruneEvery (every host does it: it is idempotent), and writes
// the log's row of version 0 again when it was found missing. The
// session's heartbeat calls it on its own connection.
func (s *Store) maintainChanges(ctx context.Context, conn *pgx.Conn) {
	if !s.ch.on.Load() {
		return
	}
	s.ch.mu.Lock()
	due := time.Since(s.ch.pruned) > changesPruneEvery
	if due {
		s.ch.pruned = time.Now()
	}
	missing := s.ch.epoch == 0
	s.ch.mu.Unlock()
	if missing {
		// The next read of the log adopts the new epoch (and so takes
		// everything as changed once more).
		conn.Exec(ctx, s.q.changesSentinel, newEpoch())
	}
	if due {
		conn.Exec(ctx, s.q.changesPrune, changesKeep.Seconds()) // a failure waits for the next time
	}
}
