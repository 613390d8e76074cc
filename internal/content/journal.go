package content

import "github.com/doppelfs/doppel/internal/schema"

// A transaction journals what it changed at its version, once in the
// volume's journal and, for inodes of a clone, once more in that clone's
// (so that a diff between clones reads only theirs).

// Journal records that ino changed in this transaction.
func (t *Tx) Journal(ino uint64, op uint8) error {
	if err := t.b.Set(schema.JournalKey(t.version, ino), schema.JournalEntry{Op: op}.Encode()); err != nil {
		return err
	}
	if c := t.treeOf(ino); c != 0 {
		return t.b.Set(schema.TreeJournalKey(c, t.version, ino), schema.JournalEntry{Op: op}.Encode())
	}
	return nil
}

// JournalName records that entry name of directory dir changed.
func (t *Tx) JournalName(dir uint64, name string) error {
	if err := t.b.Set(schema.JournalNameKey(t.version, dir, name), schema.JournalEntry{Op: schema.OpDirents}.Encode()); err != nil {
		return err
	}
	if c := t.treeOf(dir); c != 0 {
		return t.b.Set(schema.TreeJournalNameKey(c, t.version, dir, name), schema.JournalEntry{Op: schema.OpDirents}.Encode())
	}
	return nil
}

// SetTree notes the clone of an inode the transaction saves, so that its
// journal entries need not read the record back.
func (t *Tx) SetTree(ino, clone uint64) {
	if t.trees == nil {
		t.trees = make(map[uint64]uint64, 4)
	}
	t.trees[ino] = clone
}

// treeOf is the clone ino belongs to (0: none, or the inode is gone).
func (t *Tx) treeOf(ino uint64) uint64 {
	if c, ok := t.trees[ino]; ok {
		return c
	}
	raw, err := t.b.Get(schema.InodeKey(ino))
	if err != nil {
		return 0
	}
	n, err := schema.DecodeInode(raw)
	if err != nil {
		return 0
	}
	return n.Clone
}
