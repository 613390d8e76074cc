package content

import (
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// A transaction journals what it changed at its version, once in the
// volume's journal and once more in the journal of every clone the inode
// lies in (so that a diff between clones reads only theirs).

// Journal records that ino changed in this transaction.
func (t *Tx) Journal(ino uint64, op uint8) error {
	if err := t.b.Set(schema.JournalKey(t.version, ino), schema.JournalEntry{Op: op}.Encode()); err != nil {
		return err
	}
	for _, c := range t.treesOf(ino) {
		if err := t.b.Set(schema.TreeJournalKey(c, t.version, ino), schema.JournalEntry{Op: op}.Encode()); err != nil {
			return err
		}
	}
	return nil
}

// JournalName records that entry name of directory dir changed.
func (t *Tx) JournalName(dir uint64, name string) error {
	if err := t.b.Set(schema.JournalNameKey(t.version, dir, name), schema.JournalEntry{Op: schema.OpDirents}.Encode()); err != nil {
		return err
	}
	for _, c := range t.treesOf(dir) {
		if err := t.b.Set(schema.TreeJournalNameKey(c, t.version, dir, name), schema.JournalEntry{Op: schema.OpDirents}.Encode()); err != nil {
			return err
		}
	}
	return nil
}

func (t *Tx) treesOf(ino uint64) []uint64 {
	if t.trees == nil {
		return nil
	}
	return t.trees.Of(t.b, ino)
}

// TreeJournal is how a transaction finds the clones whose journals an
// inode's changes also go to, and tells the finder what changes that.
type TreeJournal interface {
	// Of lists the clones ino lies in, as r shows the volume.
	Of(r meta.Reader, ino uint64) []uint64
	// Relinked says that ino's names changed (a link, an unlink, a new
	// inode linked for the first time, a rename within its directory).
	Relinked(ino uint64)
	// Moved says that a directory moved to another parent: the clones
	// above everything below it may have changed.
	Moved()
}

// SetTrees sets the transaction's TreeJournal (nil: none, only the
// volume's journal).
func (t *Tx) SetTrees(tj TreeJournal) { t.trees = tj }

// Relinked tells the tree journal that ino's names changed.
func (t *Tx) Relinked(ino uint64) {
	if t.trees != nil {
		t.trees.Relinked(ino)
	}
}

// Moved tells the tree journal that a directory moved to another parent.
func (t *Tx) Moved() {
	if t.trees != nil {
		t.trees.Moved()
	}
}
