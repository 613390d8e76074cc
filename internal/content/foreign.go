package content

import (
	"bytes"
	"fmt"
	"sync"
	"time"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Transactions across hosts (docs/SHARED.md, 9.2). A store that several
// processes write at once (meta.TxLocker) gives each transaction a batch
// that holds the volume's transaction lock until it commits or aborts,
// and reads the volume version and stats as it takes it. A version other
// than the one this engine committed last means other processes
// committed since: what this engine (and the layers above, through
// OnForeignCommits) kept of the volume may be stale, and is dropped or
// read again before the transaction reads anything.

// txBatch is the batch of a new transaction. txMu is held.
func (e *Engine) txBatch() (meta.Batch, error) {
	locker, ok := e.meta.(meta.TxLocker)
	if !ok {
		return e.meta.NewBatch(), nil
	}
	b, vals, err := locker.LockedBatch(schema.KeyVersion, schema.KeyStats)
	if err != nil {
		return nil, err
	}
	version, stats := uint64(0), schema.Stats{}
	if vals[0] != nil {
		if version, err = schema.ParseU64(vals[0]); err != nil {
			b.Close()
			e.foreignFailed = true
			return nil, fmt.Errorf("volume version: %w", err)
		}
	}
	if vals[1] != nil {
		if stats, err = schema.DecodeStats(vals[1]); err != nil {
			b.Close()
			e.foreignFailed = true
			return nil, fmt.Errorf("volume stats: %w", err)
		}
	}
	if version != e.version {
		changed := meta.Changes{All: true}
		if fc, ok := b.(meta.ForeignChanges); ok && !e.foreignFailed {
			changed = fc.ForeignChanges()
		}
		// The store hands what changed out once: if applying it fails,
		// the next transaction takes everything as changed.
		e.foreignFailed = true
		if err := e.foreignCommits(version, stats, changed); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// foreignCommits takes the volume version and stats other processes left
// and drops what may be stale: what changed says, when the store keeps a
// change log (meta.ForeignChanges), else everything. txMu is held (and
// the transaction lock). The version is taken last: if a hook fails, the
// next transaction does all of it again.
func (e *Engine) foreignCommits(version uint64, stats schema.Stats, changed meta.Changes) error {
	// A store with a change log dropped what changed from its cache as
	// it took the lock; without one (or when it lost track), everything
	// counts as changed.
	if d, ok := e.meta.(meta.CacheDropper); ok && changed.All {
		d.DropCaches()
	}
	if changed.Changed(schema.ChunkRange()) {
		// A chunk another process created must be looked up again, or
		// two processes would both create its record and lose a
		// reference; a record may also have moved (compaction there) or
		// gone. With the keys known, only those chunks: another host
		// writing fresh data must not cost this one a lookup of every
		// chunk it stored meanwhile.
		if hs, exact := changedChunks(changed); exact {
			e.created.record(hs)
			for _, h := range hs {
				e.locs.c.Remove(h)
			}
		} else {
			e.created.foreign()
			e.locs.c.Purge()
		}
	}
	for _, fn := range e.onForeign {
		if err := fn(changed); err != nil {
			return fmt.Errorf("reading what other hosts changed: %w", err)
		}
	}
	e.statsMu.Lock()
	e.stats = stats
	e.statsMu.Unlock()
	e.version = version
	e.foreignFailed = false
	e.counters.foreignCommits.Add(1)
	return nil
}

// changedChunks returns the chunks whose records changed, exact unless
// changed holds everything or a range that reaches into the chunk table.
func changedChunks(changed meta.Changes) (hs []schema.Hash, exact bool) {
	if changed.All || (meta.Changes{Ranges: changed.Ranges}).Changed(schema.ChunkRange()) {
		return nil, false
	}
	lo, hi := schema.ChunkRange()
	for _, k := range changed.Keys {
		if bytes.Compare(k, lo) < 0 || bytes.Compare(k, hi) >= 0 {
			continue
		}
		h, err := schema.ChunkHash(k)
		if err != nil {
			return nil, false // not a chunk record's key: take no chances
		}
		hs = append(hs, h)
	}
	return hs, true
}

// OnForeignCommits runs fn whenever a transaction finds that other
// processes committed since this engine's last commit, before the
// transaction reads anything (under the transaction lock), with what they
// changed: the namespace reloads its pins and drops its caches there. An
// error fails the transaction's Begin.
func (e *Engine) OnForeignCommits(fn func(changed meta.Changes) error) {
	e.txMu.Lock()
	defer e.txMu.Unlock()
	e.onForeign = append(e.onForeign, fn)
}

// ownCommits remembers the versions this engine committed, once
// TrackOwnCommits turned it on, until TakeOwnCommits hands them out: the
// namespace tells its own changes from other hosts' in the journal.
type ownCommits struct {
	mu sync.Mutex
	on bool
	vs []uint64
}

// maxOwnCommits bounds the versions kept for a taker that does not come:
// the oldest are dropped (their changes then look like other hosts',
// which costs only needless invalidations).
const maxOwnCommits = 1 << 16

func (o *ownCommits) note(v uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.on {
		return
	}
	if len(o.vs) >= maxOwnCommits {
		o.vs = o.vs[len(o.vs)/2:]
	}
	o.vs = append(o.vs, v)
}

// TrackOwnCommits starts remembering the versions this engine commits.
func (e *Engine) TrackOwnCommits() {
	e.own.mu.Lock()
	e.own.on = true
	e.own.mu.Unlock()
}

// TakeOwnCommits returns the versions up to upTo that this engine
// committed since the last call, and forgets them.
func (e *Engine) TakeOwnCommits(upTo uint64) map[uint64]bool {
	e.own.mu.Lock()
	defer e.own.mu.Unlock()
	out := map[uint64]bool{}
	keep := e.own.vs[:0]
	for _, v := range e.own.vs {
		if v <= upTo {
			out[v] = true
		} else {
			keep = append(keep, v)
		}
	}
	e.own.vs = keep
	return out
}

// leased reports whether this engine may do the background work name now:
// on a store several processes use (meta.Leaser), while it holds its
// lease (renewed here, for ttl); elsewhere always. A failure to ask is a
// no: the work waits for the next round.
func (e *Engine) leased(name string, ttl time.Duration) bool {
	l, ok := e.meta.(meta.Leaser)
	if !ok {
		return true
	}
	got, err := l.TryLease(name, ttl)
	if err != nil {
		e.log.Debug("lease", "name", name, "err", err)
	}
	return got && err == nil
}

// Leased is leased for the layers above (the namespace's journal pruner).
func (e *Engine) Leased(name string, ttl time.Duration) bool { return e.leased(name, ttl) }
