package namespace

import (
	"errors"
	"time"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// The journal pruner deletes the journal entries nothing can read any
// more, in the background and at every open. A journal diff between
// trees related through a pin at E reads the entries after E, so the
// journal floor (the oldest version kept) is the lowest of: one past
// every pin, and past the pin of every clone record (live or gone: a
// clone's diff with its origin reads the journal since its pin, also
// after the pin is let go), the version every consumer cursor still
// needs, and the last JournalKeep versions. The floor only rises. It is
// written before anything below it is deleted, so a crash leaves entries
// below the floor that the next run deletes; a diff whose pin lies below
// the floor walks both trees instead. Above the floor, what only diffs
// still read is compacted (journal_compact.go).

const (
	defaultJournalKeep = 4096
	defaultPruneEvery  = 30 * time.Second
	pruneBatch         = 4096 // keys per batch where ranges cannot be deleted at once
)

// JournalPrune says what a pruning pass did.
type JournalPrune struct {
	Floor     uint64 // entries below it are gone
	Ranges    int    // key ranges deleted
	Compacted JournalCompaction
}

func (v *FS) journalPruner() {
	defer v.wg.Done()
	t := time.NewTicker(v.opt.JournalPruneEvery)
	defer t.Stop()
	for {
		// One host at a time prunes (docs/SHARED.md, 9.5).
		if v.eng.Leased("journal-prune", 2*v.opt.JournalPruneEvery+time.Minute) {
			if _, err := v.PruneJournal(); err != nil && !errors.Is(err, errQuit) {
				v.log.Error("pruning the change journal failed; it is retried", "err", err)
			}
		}
		select {
		case <-v.quit:
			return
		case <-t.C:
		case <-v.pruneWake:
		}
	}
}

// wakeJournalPruner runs a pass soon (a clone went: what it held can go).
func (v *FS) wakeJournalPruner() {
	select {
	case v.pruneWake <- struct{}{}:
	default:
	}
}

// PruneJournal raises the journal floor as far as nothing needs what
// lies below it and deletes the entries below.
func (v *FS) PruneJournal() (JournalPrune, error) {
	v.pruneMu.Lock() // one pass at a time (background and callers)
	defer v.pruneMu.Unlock()
	// Diffs and cursors read the floor under journalMu: none is between
	// its check and its reads while the floor is decided and moved.
	v.journalMu.Lock()
	f, err := v.raiseFloor()
	v.journalMu.Unlock()
	if err != nil {
		return JournalPrune{}, err
	}
	ranges, err := v.prunableRanges(f)
	if err != nil {
		return JournalPrune{}, err
	}
	for _, r := range ranges {
		if err := v.deleteKeys(r[0], r[1]); err != nil {
			return JournalPrune{}, err
		}
	}
	c, err := v.maybeCompactJournal(f)
	return JournalPrune{Floor: f, Ranges: len(ranges), Compacted: c}, err
}

// raiseFloor writes the needed floor if it is above the current one and
// returns the floor.
func (v *FS) raiseFloor() (uint64, error) {
	f, err := v.neededFloor()
	if err != nil {
		return 0, err
	}
	old, err := v.JournalFloor() // never below another host's raise
	if err != nil {
		return 0, err
	}
	return v.raiseRecord(schema.KeyJournalFloor, old, f, false)
}

// raiseRecord writes to under key (a counter record that only rises)
// unless current, what it holds, is at or above it; it returns the
// record's value after.
func (v *FS) raiseRecord(key []byte, current, to uint64, durable bool) (uint64, error) {
	if to <= current {
		return current, nil
	}
	b := v.meta.NewBatch()
	defer b.Close()
	if err := b.Set(key, schema.U64(to)); err != nil {
		return 0, err
	}
	return to, b.Commit(durable)
}

// neededFloor is the highest floor that keeps what pins, clones, cursors
// and the retention need: the compaction bound (cursors and retention),
// lowered to what pins and clones need. A clone made while it is
// computed pins at least the version read here, so it needs nothing
// below the answer.
func (v *FS) neededFloor() (uint64, error) {
	f, err := v.compactionBound()
	if err != nil {
		return 0, err
	}
	for _, p := range v.ret.Pins() {
		f = min(f, p.Version+1)
	}
	if err := eachCloneOrGone(v.meta, func(_ uint64, rec schema.Clone) error {
		f = min(f, rec.Pin+1)
		return nil
	}); err != nil {
		return 0, err
	}
	return f, nil
}

// prunableRanges lists the key ranges below floor that hold entries: the
// volume's journal and each clone's.
func (v *FS) prunableRanges(floor uint64) ([][2][]byte, error) {
	var out [][2][]byte
	lower, upper := schema.JournalRange(0, floor)
	if any, err := hasKey(v.meta, lower, upper); err != nil {
		return nil, err
	} else if any {
		out = append(out, [2][]byte{lower, upper})
	}
	clones, err := v.treeJournalClones()
	if err != nil {
		return nil, err
	}
	for _, c := range clones {
		if c[1] < floor {
			lo, hi := schema.TreeJournalRange(c[0], 0, floor)
			out = append(out, [2][]byte{lo, hi})
		}
	}
	return out, nil
}

// deleteKeys deletes [lower, upper): with one range tombstone where the
// store has them, else a bounded batch at a time, pausing as long as
// each batch took so that foreground work keeps most of the time.
func (v *FS) deleteKeys(lower, upper []byte) error {
	b := v.meta.NewBatch()
	if rd, ok := b.(meta.RangeDeleter); ok {
		defer b.Close()
		if err := rd.DeleteRange(lower, upper); err != nil {
			return err
		}
		return b.Commit(false)
	}
	b.Close()
	for {
		select {
		case <-v.quit:
			return errQuit
		default:
		}
		start := time.Now()
		var keys [][]byte
		err := scanLimit(v.meta, lower, upper, pruneBatch, func(k []byte) { keys = append(keys, k) })
		if err != nil || len(keys) == 0 {
			return err
		}
		if err := v.deleteEach(keys); err != nil {
			return err
		}
		time.Sleep(time.Since(start))
	}
}

// scanLimit calls fn with copies of at most n keys of [lower, upper).
func scanLimit(r meta.Reader, lower, upper []byte, n int, fn func(k []byte)) error {
	it, err := r.NewIter(lower, upper)
	if err != nil {
		return err
	}
	for ok := it.First(); ok && n > 0; ok = it.Next() {
		fn(append([]byte(nil), it.Key()...))
		n--
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}

func hasKey(r meta.Reader, lower, upper []byte) (bool, error) {
	it, err := r.NewIter(lower, upper)
	if err != nil {
		return false, err
	}
	ok := it.First()
	if err := it.Error(); err != nil {
		it.Close()
		return false, err
	}
	return ok, it.Close()
}

// readU64 reads a counter record, def if it is missing.
func readU64(r meta.Reader, key []byte, def uint64) (uint64, error) {
	raw, err := r.Get(key)
	if errors.Is(err, meta.ErrNotFound) {
		return def, nil
	}
	if err != nil {
		return 0, err
	}
	return schema.ParseU64(raw)
}
