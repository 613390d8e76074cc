package namespace

import (
	"fmt"
	"slices"
	"sync"
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
// Only a directory's move changes the clones above anything, so the
// clones of each directory are remembered (treeCache) and forgotten when
// a directory moves: journaling a file's change then costs reading its
// record and its parents, whatever the depth.

// treeCache remembers, per directory, the clones it lies in. Entries a
// transaction works out are kept once it commits, unless a directory
// moved meanwhile (gen changed).
type treeCache struct {
	mu   sync.Mutex
	gen  uint64              // bumped whenever a directory moves
	dirs map[uint64][]uint64 // directory -> clones, sorted
}

const treeCacheMax = 1 << 16 // directories remembered; past it, start over

// checkTreeCache makes every answer the cache gives checked against a walk
// (the randomized tests set it).
var checkTreeCache atomic.Bool

// txTrees is a transaction's view of the cache: what it works out stays
// pending until it commits, as its reads see its own uncommitted writes.
type txTrees struct {
	c       *treeCache
	gen     uint64
	pending map[uint64][]uint64
}

// forTx returns the clones-of function for tx, and keeps what it learns
// when tx commits.
func (c *treeCache) forTx(tx *content.Tx) func(meta.Reader, uint64) []uint64 {
	c.mu.Lock()
	t := &txTrees{c: c, gen: c.gen, pending: map[uint64][]uint64{}}
	c.mu.Unlock()
	tx.OnCommit(t.keep)
	return t.of
}

// moved forgets every directory's clones: a directory moved.
func (c *treeCache) moved() {
	c.mu.Lock()
	c.gen++
	c.dirs = nil
	c.mu.Unlock()
}

func (c *treeCache) lookup(gen, dir uint64) ([]uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return nil, false
	}
	cl, ok := c.dirs[dir]
	return cl, ok
}

// keep adds the transaction's findings, unless a directory moved since
// it began.
func (t *txTrees) keep() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.gen != t.c.gen || len(t.pending) == 0 {
		return
	}
	if t.c.dirs == nil || len(t.c.dirs)+len(t.pending) > treeCacheMax {
		t.c.dirs = map[uint64][]uint64{}
	}
	for d, cl := range t.pending {
		t.c.dirs[d] = cl
	}
}

// of lists the clones ino lies in, as r shows the volume.
func (t *txTrees) of(r meta.Reader, ino uint64) []uint64 {
	return t.walk(r, ino, 0)
}

func (t *txTrees) walk(r meta.Reader, ino uint64, depth int) []uint64 {
	if cl, ok := t.pending[ino]; ok {
		return cl
	}
	if cl, ok := t.c.lookup(t.gen, ino); ok {
		if checkTreeCache.Load() && named(r, ino) {
			fresh := (&txTrees{c: &treeCache{gen: 1}, pending: map[uint64][]uint64{}}).walk(r, ino, depth)
			if !slices.Equal(fresh, cl) {
				panic(fmt.Sprintf("namespace: clones of directory %d remembered as %v, are %v", ino, cl, fresh))
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
		lower, upper := schema.ParentRange(ino)
		scan(r, lower, upper, func(k, _ []byte) error {
			if _, parent, _, err := schema.ParseParentKey(k); err == nil && parent != ino {
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
	// A directory without a name is being made (its entry comes later in
	// the transaction) or removed: its clones are not settled yet.
	if isDir(n.Mode) && linked {
		t.pending[ino] = out
	}
	return out
}

// noteClones sets hasClones if the volume has a clone record: until then
// no inode lies in a clone and transactions skip the walk.
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

// named reports whether ino is the root or has a name.
func named(r meta.Reader, ino uint64) bool {
	lower, upper := schema.ParentRange(ino)
	ok, _ := hasKey(r, lower, upper)
	return ino == vfs.RootIno || ok
}
