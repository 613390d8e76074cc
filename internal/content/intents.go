package content

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/doppelfs/doppel/internal/schema"
)

// Intent records (inplace.go; schema.IntentKey): like a RAID array's
// write-intent bitmap, they say durably where owned blocks may have been
// written in place since the last Sync, not what was written. A zone's
// record is committed (synced) before the first in-place write into it;
// a Sync that made every earlier write and commit durable deletes the
// records of the zones written only before the Sync ahead of it began.
// Like md's bitmap, records are cleared lazily: a zone a writer is still
// in keeps its record across a periodic Sync instead of taking a synced
// commit again at once (a copy over an export's data left the cores
// idle behind those commits' fdatasyncs). A writer that comes
// into a zone from the one below it gets the records of the next
// intentReadAhead zones with its own, for the same reason. What either
// costs is a check of those zones after a crash.

// intentReadAhead is how many zones past a sequential writer's new zone
// get their records in the same synced commit: 448 MiB of a file.
const intentReadAhead = 7

// intentZone is one zone of one file.
type intentZone struct{ ino, zone uint64 }

// zoneOf is the zone of ino holding offset off.
func zoneOf(ino uint64, off int64) intentZone {
	return intentZone{ino, uint64(off) / schema.IntentZoneBytes}
}

// intents is what this engine knows of its intent records.
type intents struct {
	mu sync.Mutex
	// epoch counts Syncs begun (syncEpoch); a write stamps its zone with
	// the epoch it ran in.
	epoch uint64
	zones map[intentZone]uint64 // durable records -> epoch of their last write
}

// intendOverwrite makes sure durable intent records cover the blocks of
// ino at offs before they are written in place, and stamps their zones
// with the current epoch. The transaction that writes them calls it
// under txMu, so that no Sync begins between the stamp and the write;
// Store calls it before (deferInPlace), outside the lock, so that the transaction
// seldom waits for a record's fdatasync. The synced commit runs without
// the intents' lock, and the zones are looked up again after it: a
// record a Sync cleared meanwhile is made again.
func (e *Engine) intendOverwrite(ino uint64, offs []int64) error {
	in := &e.intents
	for {
		in.mu.Lock()
		if in.zones == nil {
			in.zones = map[intentZone]uint64{}
		}
		var missing []intentZone
		for _, off := range offs {
			z := zoneOf(ino, off)
			if _, ok := in.zones[z]; !ok && (len(missing) == 0 || missing[len(missing)-1] != z) {
				missing = append(missing, z)
			}
		}
		missing = in.readAhead(missing)
		if len(missing) == 0 {
			for _, off := range offs {
				in.zones[zoneOf(ino, off)] = in.epoch
			}
			in.mu.Unlock()
			return nil
		}
		in.mu.Unlock()
		if err := e.commitIntents(missing); err != nil {
			return err
		}
		in.mu.Lock()
		for _, z := range missing {
			if _, ok := in.zones[z]; !ok {
				in.zones[z] = in.epoch
			}
		}
		in.mu.Unlock()
	}
}

// readAhead adds to missing, the zones a write needs records for, the
// intentReadAhead zones after each that a sequential writer will need
// next: one whose zone below has a record. Called with in.mu held.
func (in *intents) readAhead(missing []intentZone) []intentZone {
	n := len(missing)
	for _, z := range missing[:n] {
		if z.zone == 0 || z.zone > math.MaxUint64-intentReadAhead {
			continue
		}
		if _, below := in.zones[intentZone{z.ino, z.zone - 1}]; !below {
			continue
		}
		for next := z.zone + 1; next <= z.zone+intentReadAhead; next++ {
			nz := intentZone{z.ino, next}
			if _, ok := in.zones[nz]; !ok && !slices.Contains(missing, nz) {
				missing = append(missing, nz)
			}
		}
	}
	return missing
}

// pending reports whether any zone may hold bytes written in place that
// no Sync made durable yet.
func (in *intents) pending() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.zones) > 0
}

// commitIntents makes the intent records of zones durable. The synced
// commit makes every commit before it durable too: the engine's commit
// sync (SetCommitSync) makes the chunks they name durable first.
func (e *Engine) commitIntents(zones []intentZone) error {
	b := e.meta.NewBatch()
	defer b.Close()
	for _, z := range zones {
		if err := b.Set(schema.IntentKey(z.ino, z.zone), nil); err != nil {
			return err
		}
	}
	if err := b.Commit(true); err != nil {
		return fmt.Errorf("intent record: %w", err)
	}
	return nil
}

// syncEpoch begins a Sync's epoch and returns the one before: every
// in-place write stamped with it or earlier belongs to a transaction
// that had ended (txMu) when the Sync began, so the Sync makes it and its
// commit durable.
func (e *Engine) syncEpoch() uint64 {
	if !e.inPlace {
		return 0
	}
	e.txMu.Lock()
	defer e.txMu.Unlock()
	e.intents.mu.Lock()
	defer e.intents.mu.Unlock()
	e.intents.epoch++
	return e.intents.epoch - 1
}

// clearIntents deletes the intent records of the zones written in place
// in epoch upTo or before, which a Sync made durable. The deletion need
// not be durable: a record that comes back after a crash only costs its
// zone's check.
func (e *Engine) clearIntents(upTo uint64) error {
	if !e.inPlace {
		return nil
	}
	in := &e.intents
	in.mu.Lock()
	defer in.mu.Unlock()
	var done []intentZone
	for z, ep := range in.zones {
		if ep <= upTo {
			done = append(done, z)
		}
	}
	if len(done) == 0 {
		return nil
	}
	b := e.meta.NewBatch()
	defer b.Close()
	for _, z := range done {
		if err := b.Delete(schema.IntentKey(z.ino, z.zone)); err != nil {
			return err
		}
	}
	if err := b.Commit(false); err != nil {
		return err
	}
	for _, z := range done {
		delete(in.zones, z)
	}
	return nil
}
