package namespace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"time"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Journal compaction bounds what a long-lived clone holds. A clone's diff
// with its origin reads the journal since its pin, so the pruner keeps
// everything since the oldest pin; under churn that grows with the
// volume's history, not its size. But a diff needs only the set of inodes
// and names that changed since its pin, not every change: of an inode's
// (or a name's) entries, the newest is enough for every diff that would
// have read an older one. And an inode deleted for good (never reused)
// has no path a diff could find: the name entries of its removal (in its
// directory) stand for it, and a deleted directory's names stand for
// nothing. So below the compaction bound, the entries that no cursor and
// no retention window keeps whole, each journal (the volume's and every
// clone's) keeps only the newest entry of each inode that still exists
// and of each name in a directory that does. What a clone holds is then
// bounded by the live inodes and names changed since its pin.
//
// Safe under concurrent diffs: an entry goes only when a newer one of the
// same inode or name stays, and a diff reads in version order, so it
// finds the newer one whenever it would have found the old. Readers that
// need every version (other hosts' cache invalidation skips its own
// commits' entries) treat the compacted part as pruned: the bound is
// raised before anything below it goes.
//
// A pass rereads the whole compactable part of the journal, so it runs
// only once the entries added below the bound since the last pass are at
// least as many as that pass kept (and Options.JournalCompactMin): each entry is
// read a bounded number of times on average.

const (
	defaultJournalCompactMin = 4096    // new entries below the bound before a pass
	journalCompactSet        = 1 << 18 // inodes and names remembered at once
)

// journalCompaction is the pruner's bookkeeping (guarded by pruneMu).
type journalCompaction struct {
	countedTo uint64 // the volume journal's entries below it are counted
	pending   int    // entries counted since the last pass
	kept      int    // entries the last pass kept
}

// JournalCompaction says what a compaction pass did.
type JournalCompaction struct {
	Bound   uint64 // entries below it were compacted
	Deleted int    // entries removed (the volume's and the clones')
	Kept    int    // entries of the volume's journal left below Bound
}

// maybeCompactJournal runs a compaction pass when enough entries have
// come below the bound since the last one. floor is the journal floor.
func (v *FS) maybeCompactJournal(floor uint64) (JournalCompaction, error) {
	bound, err := v.compactionBound()
	if err != nil || bound <= floor {
		return JournalCompaction{}, err
	}
	c := &v.compaction
	from := max(c.countedTo, floor)
	if from < bound {
		lower, upper := schema.JournalRange(from, bound)
		n, err := countKeys(v.meta, lower, upper)
		if err != nil {
			return JournalCompaction{}, err
		}
		c.pending += n
		c.countedTo = bound
	}
	if c.pending < max(c.kept, v.opt.JournalCompactMin) {
		return JournalCompaction{}, nil
	}
	return v.compactJournal(floor)
}

// CompactJournal compacts the journal below what cursors and the
// retention window keep whole, now.
func (v *FS) CompactJournal() (JournalCompaction, error) {
	v.pruneMu.Lock()
	defer v.pruneMu.Unlock()
	floor, err := v.JournalFloor()
	if err != nil {
		return JournalCompaction{}, err
	}
	return v.compactJournal(floor)
}

// compactionBound is the lowest version an entry must be kept whole
// from: the retention window's and every cursor's start. Pins and clones
// do not count: diffs read sets.
func (v *FS) compactionBound() (uint64, error) {
	cur, err := readU64(v.meta, schema.KeyVersion, 0)
	if err != nil {
		return 0, err
	}
	bound := uint64(0)
	if cur+1 > v.opt.JournalKeep {
		bound = cur + 1 - v.opt.JournalKeep
	}
	cursors, err := v.JournalCursors()
	if err != nil {
		return 0, err
	}
	for _, c := range cursors {
		bound = min(bound, c)
	}
	return bound, nil
}

// compactJournal raises the compaction bound as far as cursors and the
// retention window allow and collapses the entries in [floor, bound) of
// every journal.
func (v *FS) compactJournal(floor uint64) (JournalCompaction, error) {
	// Cursors are set under journalMu: none is set between the bound's
	// reading of them and its raise.
	v.journalMu.Lock()
	bound, err := v.compactionBound()
	if err == nil && bound > floor {
		err = v.raiseCompactionBound(bound)
	}
	v.journalMu.Unlock()
	if err != nil || bound <= floor {
		return JournalCompaction{}, err
	}
	res := JournalCompaction{Bound: bound}
	lower, upper := schema.JournalRange(floor, bound)
	deleted, kept, err := v.collapse(lower, upper, 9) // 'j' + version
	if err != nil {
		return res, err
	}
	res.Deleted, res.Kept = deleted, kept
	clones, err := v.treeJournalClones()
	if err != nil {
		return res, err
	}
	for _, c := range clones {
		lower, upper := schema.TreeJournalRange(c[0], floor, bound)
		n, _, err := v.collapse(lower, upper, 17) // 'J' + clone + version
		if err != nil {
			return res, err
		}
		res.Deleted += n
	}
	v.compaction = journalCompaction{countedTo: bound, kept: kept}
	return res, nil
}

// raiseCompactionBound writes bound unless the record is at or above it,
// durably: before any entry below it goes.
func (v *FS) raiseCompactionBound(bound uint64) error {
	old, err := v.JournalCompacted()
	if err != nil {
		return err
	}
	_, err = v.raiseRecord(schema.KeyJournalCompacted, old, bound, true)
	return err
}

// JournalCompacted is the compaction bound: below it, entries may have
// been collapsed. Read past any record cache, as the floor is.
func (v *FS) JournalCompacted() (uint64, error) {
	return readU64(v.fresh(), schema.KeyJournalCompacted, 0)
}

// collapse deletes, in [lower, upper), every entry whose inode and name
// (the key after its first skip bytes) has a newer entry in the range.
// It reads a page at a time and remembers at most journalCompactSet
// inodes and names (past that it starts over, so the range is then
// collapsed in windows: still correct, less compact).
func (v *FS) collapse(lower, upper []byte, skip int) (deleted, kept int, err error) {
	newest := map[string][]byte{} // inode and name -> its newest key so far
	// Past any record cache: on a volume several hosts mount, a cached
	// answer could be older than another host's inode.
	dead := goneInodes{r: v.fresh(), known: map[uint64]bool{}}
	from := lower
	for {
		select {
		case <-v.quit:
			return deleted, kept, errQuit
		default:
		}
		start := time.Now()
		var keys [][]byte
		if err := scanLimit(v.meta, from, upper, pruneBatch, func(k []byte) { keys = append(keys, k) }); err != nil {
			return deleted, kept, err
		}
		if len(keys) == 0 {
			return deleted, kept, nil
		}
		var stale [][]byte
		for _, k := range keys {
			if len(k) < skip+8 {
				continue // malformed: fsck's business
			}
			kept++
			// An inode's entry, or a name's in its directory.
			gone, err := dead.of(binary.BigEndian.Uint64(k[skip:]))
			if err != nil {
				return deleted, kept, err
			}
			if gone {
				stale = append(stale, k)
				continue
			}
			id := string(k[skip:])
			if old, ok := newest[id]; ok {
				stale = append(stale, old)
			} else if len(newest) >= journalCompactSet {
				clear(newest)
				clear(dead.known)
			}
			newest[id] = k
		}
		if err := v.deleteEach(stale); err != nil {
			return deleted, kept, err
		}
		deleted += len(stale)
		kept -= len(stale)
		from = append(bytes.Clone(keys[len(keys)-1]), 0)
		time.Sleep(time.Since(start)) // leave foreground work most of the time
	}
}

// goneInodes tells inodes deleted for good: no record and no name.
// Inode numbers are never reused, so such an inode never comes back, and
// a diff finds no path for it or for names in it: its entries, and its
// names' if it was a directory, tell no diff anything.
type goneInodes struct {
	r     meta.Reader
	known map[uint64]bool
}

func (g *goneInodes) of(ino uint64) (bool, error) {
	if gone, ok := g.known[ino]; ok {
		return gone, nil
	}
	_, err := g.r.Get(schema.InodeKey(ino))
	gone := errors.Is(err, meta.ErrNotFound)
	if err != nil && !gone {
		return false, err
	}
	if gone {
		named, err := hasName(g.r, ino)
		if err != nil {
			return false, err
		}
		gone = !named
	}
	g.known[ino] = gone
	return gone, nil
}

// deleteEach deletes keys in one batch.
func (v *FS) deleteEach(keys [][]byte) error {
	if len(keys) == 0 {
		return nil
	}
	b := v.meta.NewBatch()
	defer b.Close()
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return b.Commit(false)
}

// treeJournalClones lists the clones that have entries in the tree
// journal, each with the version of its oldest entry.
func (v *FS) treeJournalClones() ([][2]uint64, error) {
	var out [][2]uint64
	lower, upper := schema.TreeJournalAll()
	it, err := v.meta.NewIter(lower, upper)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	for ok := it.First(); ok; {
		c, ver, _, _, err := schema.ParseTreeJournalKey(it.Key())
		if err != nil {
			return nil, err
		}
		out = append(out, [2]uint64{c, ver})
		if c == ^uint64(0) {
			break
		}
		next, _ := schema.TreeJournalRange(c+1, 0, 0)
		ok = it.SeekGE(next)
	}
	return out, it.Error()
}

// countKeys counts the keys of [lower, upper).
func countKeys(r meta.Reader, lower, upper []byte) (int, error) {
	it, err := r.NewIter(lower, upper)
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Error(); err != nil {
		it.Close()
		return 0, err
	}
	return n, it.Close()
}
