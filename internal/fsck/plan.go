package fsck

import (
	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/schema"
)

// plan is what a repair would change, gathered while checking: the check
// finds each problem once, and the repair does not have to find it again.
// Counts (links, refcounts, mapped bytes) are not in the plan: the repair
// derives them from the check's model once the plan is known.
type plan struct {
	early   []keyFix          // before the engine opens: records that would stop it
	keys    []keyFix          // records to delete or rewrite, each on its own
	entries []entryFix        // directory entries to delete
	drops   map[uint64][]drop // extents to delete, by inode
	sizes   map[uint64]int64  // inodes whose size must grow to cover their extents
	// orphanSegs are segments holding data no record names.
	orphanSegs []uint32
}

func newPlan() plan { return plan{drops: map[uint64][]drop{}, sizes: map[uint64]int64{}} }

// note describes a repair for the report; the path is resolved at the end
// like a problem's.
type note struct {
	kind   string
	ino    uint64 // noIno if none
	name   string // entry of directory ino, if any
	action string
}

// keyFix deletes a record (value nil) or writes it.
type keyFix struct {
	key, value []byte
	note
}

// entryFix deletes entry name of dir, which names ino, and its
// back-reference.
type entryFix struct {
	dir  uint64
	name string
	ino  uint64
	note
}

// drop is an extent to delete.
type drop struct {
	off    int64
	length uint32 // 0 if the extent does not decode
	hash   schema.Hash
	// counted: the extent decoded and its chunk has a record, so the
	// check counted it as one of the chunk's references.
	counted bool
	// owned is the block the extent owns (owned.go; Segment 0: none),
	// freed with it.
	owned blob.Loc
	kind  string // the problem that makes it go
	// lost says why the file loses this data ("" if no file data is lost:
	// the extent belongs to an inode that does not exist or is no file).
	lost string
}

func (c *checker) deleteKey(kind string, ino uint64, key []byte, action string) {
	c.fix.keys = append(c.fix.keys, keyFix{key: clone(key), note: note{kind: kind, ino: ino, action: action}})
}

func (c *checker) deleteEarly(kind string, key []byte, action string) {
	c.fix.early = append(c.fix.early, keyFix{key: clone(key), note: note{kind: kind, ino: noIno, action: action}})
}

func (c *checker) dropEntry(kind string, dir uint64, name string, ino uint64, action string) {
	c.fix.entries = append(c.fix.entries, entryFix{dir, name, ino, note{kind, dir, name, action}})
}

func (c *checker) dropExtent(ino uint64, d drop) {
	c.fix.drops[ino] = append(c.fix.drops[ino], d)
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
