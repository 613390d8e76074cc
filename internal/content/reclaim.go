package content

import (
	"cmp"
	"errors"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
)

// reclaimer returns the space of freed chunks to the host. A chunk is
// punched only after the metadata that dropped its last reference is
// durable: otherwise a crash could bring back a reference to punched bytes.
// The drop wrote a free record in the same batch; the reclaimer deletes it
// after punching, and Recover punches what a crash left.
//
// Where the store reuses slots (blob.SlotReuser), a pass offers the freed
// one-block chunks to it instead: new one-block chunks are written into
// them, and the commit that names such a chunk deletes the slot's free
// record (Tx.claimSlot). Slots unused for slotLife are punched. Space
// asked back (a punched hole, TRIM, a truncation, a deleted file:
// Tx.Release) is never pooled: it is punched at the next pass.
type reclaimer struct {
	rmu      sync.Mutex
	pending  []blob.Loc // freed by overwrites: pooled where the store reuses slots
	released []blob.Loc // freed on request (Tx.Release): punched, never pooled
	quit     chan struct{}
	wg       sync.WaitGroup
	eng      *Engine
	every    time.Duration // between passes
	lastErr  string        // of the last failed sync, logged once; reclaimer goroutine only
	// held is read-locked by HoldReclaim and write-locked by a pass; a
	// pass does not wait for holds but leaves its work for the next tick.
	held sync.RWMutex
	// later holds what a pass that let a hold in between its batches left
	// to punch (durable already); guarded by held.
	later []blob.Loc
}

func (r *reclaimer) start(e *Engine, every time.Duration) {
	r.eng, r.every, r.quit = e, every, make(chan struct{})
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				r.reclaim(false)
			case <-r.quit:
				r.reclaim(true)
				return
			}
		}
	}()
}

func (r *reclaimer) add(locs []blob.Loc, released bool) {
	if len(locs) == 0 {
		return
	}
	r.rmu.Lock()
	if released {
		r.released = append(r.released, locs...)
	} else {
		r.pending = append(r.pending, locs...)
	}
	r.rmu.Unlock()
}

// slotLife is how long a freed block waits in the store's pool for a new
// chunk before it is punched. A random writer's commits come a second or
// so apart (each flushes many MiB of blocks); the space of a volume that
// is no longer written comes back within about two seconds.
const slotLife = 1500 * time.Millisecond

// punchBatch is how many locations a pass punches between looks at the
// clock: a punch of a scattered 4 KiB block costs ext4 tens of µs (more on
// a file system mounted with discard), so a pass with a few hundred
// thousand of them to punch runs for seconds.
var punchBatch = 4096 // a variable for tests

// reclaim makes the metadata durable, then punches what was pending before
// (or pools it, see above) and the slots pooled longer than slotLife; the
// last pass (final) pools nothing and punches every pooled slot.
//
// A pass whose punching outlasts the reclaimer's interval takes in, between
// batches, what was freed meanwhile, as a new pass would: otherwise the
// blocks a writer frees wait for the punching to end before they are
// pooled, the writer's new blocks are appended meanwhile, and the pooled
// blocks they could have taken expire and are punched in turn.
func (r *reclaimer) reclaim(final bool) {
	if !r.held.TryLock() {
		return // an online check reads chunks a pass could punch; next tick
	}
	locs := append(r.later, r.collect(final)...)
	r.later = nil
	next := time.Now().Add(r.every)
	for len(locs) > 0 {
		n := min(len(locs), punchBatch)
		r.eng.freeAll(locs[:n])
		if err := r.eng.dropFreeRecords(locs[:n]); err != nil {
			r.eng.log.Warn("reclaim: drop free records (they are punched again at the next open)", "err", err)
		}
		// Between batches, a hold (an online check) or a compaction
		// pass may come in; the rest is then punched by a later pass.
		r.later = locs[n:]
		r.held.Unlock()
		if !r.held.TryLock() {
			return
		}
		locs, r.later = r.later, nil
		if !final && time.Now().After(next) {
			locs = append(locs, r.collect(false)...)
			next = time.Now().Add(r.every)
		}
	}
	r.held.Unlock()
}

// collect makes the metadata of what is pending durable and returns what
// to punch now, in file order: what was released (Tx.Release), what the
// store did not pool and the slots that expired (all of them when final).
func (r *reclaimer) collect(final bool) []blob.Loc {
	r.rmu.Lock()
	locs, released := r.pending, r.released
	r.pending, r.released = nil, nil
	r.rmu.Unlock()
	if len(locs) > 0 || len(released) > 0 {
		if err := r.eng.Sync(); err != nil {
			if err.Error() != r.lastErr {
				r.eng.log.Error("reclaim: sync failed; freed chunks stay until it works", "err", err)
			}
			r.lastErr = err.Error()
			r.add(locs, false)
			r.add(released, true)
			locs, released = nil, nil
		} else {
			r.lastErr = ""
		}
	}
	if slots := r.eng.slots; slots != nil {
		life := slotLife
		if final {
			life = 0
		} else if len(locs) > 0 {
			locs = slots.OfferSlots(locs)
		}
		locs = append(locs, slots.ExpireSlots(life)...)
	}
	locs = append(locs, released...)
	slices.SortFunc(locs, func(a, b blob.Loc) int {
		return cmp.Or(cmp.Compare(a.Segment, b.Segment), cmp.Compare(a.Offset, b.Offset))
	})
	return locs
}

// HoldReclaim keeps freed chunks from being punched until the returned
// release is called; it waits for a pass under way. An online fsck holds
// it while it reads a metadata snapshot, so that every chunk live in the
// snapshot keeps its bytes (and its segment file) until the check ends.
// Chunks freed meanwhile keep their free records and are punched later.
func (e *Engine) HoldReclaim() (release func()) {
	e.reclaimer.held.RLock()
	// Nor is any block overwritten in place (inplace.go) until then: a
	// transaction that decided to before this count rose ends first.
	e.snapshotReaders.Add(1)
	e.AwaitTransactions()
	return func() {
		e.snapshotReaders.Add(-1)
		e.reclaimer.held.RUnlock()
	}
}

func (r *reclaimer) stop() {
	close(r.quit)
	r.wg.Wait()
}

// freeAll punches locs at once, side by side ones together where the
// store can (blob.ManyFreer): only for bytes no durable metadata names.
func (e *Engine) freeAll(locs []blob.Loc) {
	m, ok := e.blobs.(blob.ManyFreer)
	if !ok {
		for _, loc := range locs {
			e.freeNow(loc)
		}
		return
	}
	freed, err := m.FreeMany(locs)
	e.counters.reclaimed.Add(freed)
	if err != nil {
		e.log.Warn("free chunk space", "chunks", len(locs), "err", err)
	}
}

// freeNow punches loc at once: only for bytes no durable metadata names.
func (e *Engine) freeNow(loc blob.Loc) {
	if err := e.blobs.Free(loc); err != nil {
		if !errors.Is(err, os.ErrNotExist) { // a pack compaction retired and deleted meanwhile
			e.log.Warn("free chunk space", "segment", loc.Segment, "offset", loc.Offset, "err", err)
		}
		return
	}
	e.counters.reclaimed.Add(int64(loc.Length))
}
