package namespace

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// A journal cursor is a consumer's claim on the change journal: the
// pruner keeps every entry from the cursor's version on. Consumers that
// read the journal after the fact (cache invalidation between hosts,
// incremental send) register one and move it as they go.

// SetJournalCursor records that consumer name still needs the entries
// from version from on. A version below the journal floor is refused:
// those entries may be gone already.
func (v *FS) SetJournalCursor(name string, from uint64) error {
	if name == "" {
		return fmt.Errorf("%w: a journal cursor needs a name", syscall.EINVAL)
	}
	if len(name) > schema.MaxNameBytes {
		return fmt.Errorf("%w: a journal cursor's name has at most %d bytes", syscall.ENAMETOOLONG, schema.MaxNameBytes)
	}
	v.journalMu.Lock() // the floor cannot rise while the cursor is set
	defer v.journalMu.Unlock()
	floor, err := v.JournalFloor()
	if err != nil {
		return err
	}
	if from < floor {
		return fmt.Errorf("%w: journal entries before version %d are pruned", syscall.ERANGE, floor)
	}
	compacted, err := v.JournalCompacted()
	if err != nil {
		return err
	}
	if from < compacted {
		return fmt.Errorf("%w: journal entries before version %d are compacted (only the newest change of each file and name is kept)", syscall.ERANGE, compacted)
	}
	b := v.meta.NewBatch()
	defer b.Close()
	if err := b.Set(schema.JournalCursorKey(name), schema.U64(from)); err != nil {
		return err
	}
	return b.Commit(true)
}

// ClearJournalCursor drops consumer name's cursor; what only it held is
// pruned by the next pass.
func (v *FS) ClearJournalCursor(name string) error {
	b := v.meta.NewBatch()
	defer b.Close()
	if err := b.Delete(schema.JournalCursorKey(name)); err != nil {
		return err
	}
	if err := b.Commit(true); err != nil {
		return err
	}
	v.wakeJournalPruner()
	return nil
}

// JournalCursors lists the registered consumers and the version each
// still needs.
func (v *FS) JournalCursors() (map[string]uint64, error) {
	out := map[string]uint64{}
	lower, upper := schema.JournalCursorRange()
	err := scan(v.meta, lower, upper, func(k, val []byte) error {
		name, err := schema.JournalCursorName(k)
		if err != nil {
			return err
		}
		if out[name], err = schema.ParseU64(val); err != nil {
			return err
		}
		return nil
	})
	return out, err
}

// JournalFloor is the oldest version whose journal entries are all kept.
// It is read past any record cache: on a volume of several hosts the
// pruner of another host raises it outside the volume lock, unlogged
// (pgstore's batches without the lock), so a cached copy may be lower
// than the floor, and entries it promises may be gone.
func (v *FS) JournalFloor() (uint64, error) {
	return readU64(v.fresh(), schema.KeyJournalFloor, 0)
}

// startTreeJournal records, on a volume made before the per-clone
// journal, the version from which it is complete: diffs reaching further
// back read the volume's journal.
func (v *FS) startTreeJournal() error {
	if _, err := v.meta.Get(schema.KeyTreeJournalSince); err == nil || !errors.Is(err, meta.ErrNotFound) {
		return err
	}
	cur, err := readU64(v.meta, schema.KeyVersion, 0)
	if err != nil {
		return err
	}
	b := v.meta.NewBatch()
	defer b.Close()
	if err := b.Set(schema.KeyTreeJournalSince, schema.U64(cur+1)); err != nil {
		return err
	}
	return b.Commit(true)
}
