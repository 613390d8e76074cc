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
	return t.trees(t.b, ino)
}

// SetTrees sets how the transaction finds the clones whose journals an
// inode's changes also go to (nil: none, only the volume's journal).
func (t *Tx) SetTrees(fn func(r meta.Reader, ino uint64) []uint64) { t.trees = fn }
