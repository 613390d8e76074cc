package namespace

import (
	"slices"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// journalTrees lists the clones ino lies in now: the clone of every inode
// on its paths up to the volume's root, itself included. Its journal
// entries go to each of them, so that a diff of a tree inside a clone
// reads that clone's journal alone (see journalRanges). Paths are taken
// as the transaction leaves them; a name change is journaled at its
// directory, whose paths hold the new and old places alike.
func journalTrees(r meta.Reader, ino uint64) []uint64 {
	var out []uint64
	seen := map[uint64]bool{}
	var walk func(ino uint64, depth int)
	walk = func(ino uint64, depth int) {
		if seen[ino] || depth > 4096 {
			return
		}
		seen[ino] = true
		if n, err := loadInode(r, ino); err == nil && n.Clone != 0 && !slices.Contains(out, n.Clone) {
			out = append(out, n.Clone)
		}
		if ino == vfs.RootIno {
			return
		}
		lower, upper := schema.ParentRange(ino)
		scan(r, lower, upper, func(k, _ []byte) error {
			if _, parent, _, err := schema.ParseParentKey(k); err == nil {
				walk(parent, depth+1)
			}
			return nil
		})
	}
	walk(ino, 0)
	return out
}

// noteClones sets hasClones if the volume has a clone record: until then
// no inode lies in a clone and transactions skip the walk above.
func (v *Volume) noteClones() error {
	for _, bounds := range []func() ([]byte, []byte){schema.CloneRange, schema.GoneRange} {
		lower, upper := bounds()
		any, err := hasKey(v.meta, lower, upper)
		if err != nil {
			return err
		}
		if any {
			v.hasClones.Store(true)
		}
	}
	return nil
}
