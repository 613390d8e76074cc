package content

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// When the dedup pass of owned blocks (owned_dedup.go) runs: in the
// background, once enough new owned blocks were kept, when the volume is
// idle or, after many more, beside writes; a pass started in a pause
// yields to the next read or write.

// ownedDedupLoop runs passes in the background while owned blocks are
// written: once ownedDedupAfter new ones were kept and the volume was idle
// for ownedDedupQuiet, or once many more were.
type ownedDedupLoop struct {
	fresh atomic.Int64 // owned blocks kept since the last pass (KeyOwnedUnshared)
	last  atomic.Int64 // when the last one was kept (unix nanoseconds)
	reads atomic.Int64 // reads served; the loop samples it every tick
	quit  chan struct{}
	done  chan struct{}
}

// countUnshared adds the owned blocks the transaction keeps to
// schema.KeyOwnedUnshared, or sets it (a pass's end).
func (t *Tx) countUnshared() error {
	if t.keptOwned == 0 && !t.unsharedSet {
		return nil
	}
	if !t.unsharedSet {
		t.unshared = t.e.ownedDedup.fresh.Load() + t.keptOwned
	}
	return t.b.Set(schema.KeyOwnedUnshared, schema.U64(uint64(max(t.unshared, 0))))
}

// loadUnshared reads schema.KeyOwnedUnshared into the loop's count.
func (e *Engine) loadUnshared() error {
	v, err := e.meta.Get(schema.KeyOwnedUnshared)
	if errors.Is(err, meta.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	n, err := schema.ParseU64(v)
	if err != nil {
		return fmt.Errorf("owned_unshared record: %w", err)
	}
	e.ownedDedup.fresh.Store(int64(n))
	return nil
}

// passDone takes the owned blocks counted before a pass began (before)
// off the count: they were all walked.
func (e *Engine) passDone(before int64) error {
	t, err := e.Begin()
	if err != nil {
		return err
	}
	t.unsharedSet, t.unshared = true, max(e.ownedDedup.fresh.Load()-before, 0)
	return t.Commit(false)
}

const (
	ownedDedupAfter = 1024 // 4 MiB of new owned blocks
	// ownedDedupBusy, ownedDedupBusyShare: a pass even while writes go
	// on, once this many blocks (4 GiB) and ownedDedupBusyShare times the
	// volume's owned blocks are new. A pass walks them all, 1.2-2.5 s of
	// CPU per million, an eighth to a quarter of what writing a million
	// blocks costs (about 10 s); at eight times, a pass under writes costs
	// them 2-3 %. At twice (until 2026-12-02) a copy over a 4 GiB export's
	// data, after fio's random writes, met a pass of 2.5 s in its last
	// third (and a copy into a fresh export, at its very end); at half
	// (until 2026-11-30), a quarter of such a copy's CPU. What waiting
	// costs is bounded: duplicates among owned blocks hold at most the
	// owned blocks' space, and an idle pause of 5 s runs the pass anyway.
	ownedDedupBusy      = 1 << 20
	ownedDedupBusyShare = 8
	ownedDedupQuiet     = 5 * time.Second
	// ownedDedupReadPatience: how long after the last write a pass waits
	// for reads to pause before it runs beside them.
	ownedDedupReadPatience = time.Minute
	ownedDedupTick         = time.Second
	// ownedDedupMaxYields: how many passes in a row may yield to the
	// foreground (passStop) before one runs to its end beside it.
	ownedDedupMaxYields = 3
)

// noteOwned counts owned blocks a commit kept; unshared is the count the
// commit left in its record. The caller holds txMu.
func (l *ownedDedupLoop) noteOwned(n, unshared int64) {
	if n > 0 {
		l.last.Store(time.Now().UnixNano())
	}
	l.fresh.Store(unshared)
}

// due reports whether a pass should run now, on a volume holding owned
// blocks: a pass walks all of them, so the new ones it waits for
// grow with them (an eighth), which keeps the walks' cost a share of the
// writes'. lastRead is when the loop last saw a read served.
//
// Idle means no write for ownedDedupQuiet and no read either: a pass
// takes a second or more of CPU per million owned blocks, and one started
// 5 s after a copy into an export ran through the reads that followed it
// (fio's random reads at depth 1 and nbdcopy's copy out, on 2 cores,
// 2026-12-02). Reads that never pause hold it back for
// ownedDedupReadPatience at most.
func (l *ownedDedupLoop) due(now, lastRead time.Time, owned int64) bool {
	n := l.fresh.Load()
	sinceWrite := now.Sub(time.Unix(0, l.last.Load()))
	idle := sinceWrite >= ownedDedupQuiet &&
		(now.Sub(lastRead) >= ownedDedupQuiet || sinceWrite >= ownedDedupReadPatience)
	return l.busy(owned) || (n >= max(ownedDedupAfter, owned/8) && idle)
}

// busy reports whether so many owned blocks are new that a pass runs
// beside writes, and to its end.
func (l *ownedDedupLoop) busy(owned int64) bool {
	return l.fresh.Load() >= max(ownedDedupBusy, ownedDedupBusyShare*owned)
}

// errPassYielded: a pass stopped for a read or write that arrived.
var errPassYielded = errors.New("dedup pass of owned blocks yielded to reads or writes")

// passStop returns the check a pass makes between its steps: ctx's end
// and, if yielding, any read served or owned block kept since the pass
// began (errPassYielded). A pass started in a pause of 5 s takes a second
// or more of CPU per million owned blocks, and the pause was often the
// gap between two steps of a user's work (nbdcopy's copy out starting 3 s
// after the copy in's flush, 2026-12-02): yielding hands the CPU back at
// once, and the next pause runs the pass again from its walk (the
// transactions it committed stay: each checked its extents).
func (l *ownedDedupLoop) passStop(ctx context.Context, yielding bool) func() error {
	reads, last := l.reads.Load(), l.last.Load()
	return func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if yielding && (l.reads.Load() != reads || l.last.Load() != last) {
			return errPassYielded
		}
		return nil
	}
}

// readWatch tells the loop when reads were last seen, from the count of
// reads it samples every tick.
type readWatch struct {
	seen int64
	last time.Time
}

func (w *readWatch) note(now time.Time, reads int64) time.Time {
	if reads != w.seen {
		w.seen, w.last = reads, now
	}
	return w.last
}

// startOwnedDedup starts the background passes of an engine that writes
// owned blocks.
func (e *Engine) startOwnedDedup() error {
	if !e.owned {
		return nil
	}
	if err := e.loadUnshared(); err != nil {
		return err
	}
	l := &e.ownedDedup
	// An open counts as a write: a pass owed since the last session waits
	// for writes to pause like any other, instead of meeting the first
	// writer (a VM booting, a copy into an export) head on.
	l.last.Store(time.Now().UnixNano())
	// The goroutines keep their own channels: stopOwnedDedup clears the
	// fields.
	quit, done := make(chan struct{}), make(chan struct{})
	l.quit, l.done = quit, done
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-quit
		cancel()
	}()
	go func() {
		defer close(done)
		tick := time.NewTicker(ownedDedupTick)
		defer tick.Stop()
		var reads readWatch
		yields := 0
		for {
			var owned int64
			select {
			case <-quit:
				return
			case now := <-tick.C:
				owned = e.Stats().OwnedBlocks
				if !l.due(now, reads.note(now, l.reads.Load()), owned) {
					continue
				}
			}
			yielding := yields < ownedDedupMaxYields && !l.busy(owned)
			start, fresh := time.Now(), l.fresh.Load()
			res, err := e.dedupOwned(l.passStop(ctx, yielding))
			took := time.Since(start).Round(time.Millisecond)
			switch {
			case errors.Is(err, errPassYielded):
				yields++
				e.log.Debug("dedup pass of owned blocks yielded to reads or writes", "after", took, "yields", yields)
				continue
			case errors.Is(err, context.Canceled):
				return
			case err != nil:
				e.log.Warn("dedup of owned blocks failed; the next pass tries again", "err", err)
			case res.Shared > 0:
				e.log.Info("dedup of owned blocks", "owned", res.Owned, "shared", res.Shared, "skipped", res.Skipped)
			}
			yields = 0
			e.log.Debug("dedup pass of owned blocks", "new_since_last", fresh, "owned", res.Owned,
				"shared", res.Shared, "took", took, "yielding", yielding)
		}
	}()
	return nil
}

// stopOwnedDedup ends the background passes and waits for the one under
// way.
func (e *Engine) stopOwnedDedup() {
	if l := &e.ownedDedup; l.quit != nil {
		close(l.quit)
		<-l.done
		l.quit = nil
	}
}
