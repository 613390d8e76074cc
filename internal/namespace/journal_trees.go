package namespace

import (
	"fmt"
	"github.com/doppelfs/doppel/internal/versions"
	"slices"
	"sync/atomic"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// Every change is journaled in the volume's journal and in the journal
// of every clone the changed inode lies in now: the clone of each inode on
// its paths to the root, itself included. A diff of trees inside clones
// then reads those clones' journals alone (journalRanges). Paths are
// taken as the transaction leaves them; a name change is journaled at its
// directory, whose paths hold the new and the old place alike.
//
// The answers are remembered per inode (treeCache): an inode's clones
// change only when its own names change (the namespace says Relinked) or
// a directory above it moves to another parent (Moved: everything is
// forgotten). Journaling a change then costs no read at all once the
// inode's answer is known.

// treeCache remembers the clones each inode lies in. It is read and
// changed only by transactions, which the content engine runs one at a
// time, and what a transaction works out is kept when it commits, before
// the next one begins (so never from an aborted transaction's state).
type treeCache struct {
	known map[uint64][]uint64 // inode -> clones, sorted
}

const treeCacheMax = 1 << 18 // inodes remembered; past it, start over

// checkTreeCache makes every answer the cache gives checked against a walk
// (the randomized tests set it).
var checkTreeCache atomic.Bool

// txTrees is a transaction's view of the cache: what it works out stays
// pending until it commits, as its reads see its own uncommitted writes.
type txTrees struct {
	c       *treeCache
	pending map[uint64][]uint64
}

// forTx returns the tree journal of tx.
func (c *treeCache) forTx(tx *content.Tx) content.TreeJournal {
	t := &txTrees{c: c, pending: map[uint64][]uint64{}}
	tx.OnCommitLocked(t.keep)
	return t
}

// keep adds the transaction's findings.
func (t *txTrees) keep() {
	if len(t.pending) == 0 {
		return
	}
	if t.c.known == nil || len(t.c.known)+len(t.pending) > treeCacheMax {
		t.c.known = map[uint64][]uint64{}
	}
	for ino, cl := range t.pending {
		t.c.known[ino] = cl
	}
}

// Relinked forgets ino: its names changed.
func (t *txTrees) Relinked(ino uint64) {
	delete(t.pending, ino)
	delete(t.c.known, ino)
}

// Moved forgets everything: a directory moved to another parent.
func (t *txTrees) Moved() {
	clear(t.pending)
	t.c.known = nil
}

// Of lists the clones ino lies in, as r shows the volume.
func (t *txTrees) Of(r meta.Reader, ino uint64) []uint64 {
	return t.walk(r, ino, 0)
}

func (t *txTrees) walk(r meta.Reader, ino uint64, depth int) []uint64 {
	if cl, ok := t.pending[ino]; ok {
		return cl
	}
	if cl, ok := t.c.known[ino]; ok {
		if checkTreeCache.Load() && named(r, ino) {
			fresh := (&txTrees{c: &treeCache{}, pending: map[uint64][]uint64{}}).walk(r, ino, depth)
			if !slices.Equal(fresh, cl) {
				panic(fmt.Sprintf("namespace: clones of inode %d remembered as %v, are %v", ino, cl, fresh))
			}
		}
		return cl
	}
	n, err := loadInode(r, ino)
	if err != nil || depth > 4096 {
		return nil // gone: its name change is what counts
	}
	var out []uint64
	if n.Clone != 0 {
		out = append(out, n.Clone)
	}
	linked := ino == vfs.RootIno
	if !linked {
		eachName(r, ino, func(parent uint64, _ string) error {
			if parent != ino {
				linked = true
				for _, c := range t.walk(r, parent, depth+1) {
					if !slices.Contains(out, c) {
						out = append(out, c)
					}
				}
			}
			return nil
		})
	}
	slices.Sort(out)
	// An inode without a name is being made (its entry comes later in the
	// transaction) or removed: its clones are not settled yet.
	if linked {
		t.pending[ino] = out
	}
	return out
}

// named reports whether ino is the root or has a name.
func named(r meta.Reader, ino uint64) bool {
	ok, _ := hasName(r, ino)
	return ino == vfs.RootIno || ok
}

// foreignCommits drops what this host keeps of the volume that other
// hosts' commits changed, before a transaction reads
// (content.Engine.OnForeignCommits; docs/SHARED.md, 9.2): changed pins
// are read again, the clones each inode lies in forgotten when names or
// clones changed, and a clone made elsewhere turns the tree journal on.
func (v *FS) foreignCommits(changed meta.Changes) error {
	if changed.Changed(schema.PinRange()) {
		pins, err := versions.LoadPins(v.meta)
		if err != nil {
			return err
		}
		v.ret.SetPins(pins)
	}
	clones := changed.Changed(schema.CloneRange()) || changed.Changed(schema.GoneRange())
	if clones || changed.Changed(schema.ParentsRange()) {
		v.trees.known = nil
	}
	if clones {
		return v.noteClones()
	}
	return nil
}

// noteClones sets hasClones if the volume has a clone record: until then
// no inode lies in a clone and transactions skip the walk.
func (v *FS) noteClones() error {
	any, err := anyClone(v.meta)
	if any {
		v.hasClones.Store(true)
	}
	return err
}
