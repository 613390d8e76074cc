package namespace

import (
	"context"
	"fmt"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/ops"
	"github.com/doppelfs/doppel/internal/schema"
)

// ops.Usage reports the space used by the subtree at path ("/"-rooted, inside
// the volume). Buffered writes below path are committed first. The walk
// reads one metadata snapshot, so it sees a consistent state and holds no
// lock while writers go on.
//
// A file counts once however many of its links the subtree holds. Its
// references count as the subtree's own only if the subtree holds all its
// links: a file with a link elsewhere survives the subtree's deletion and
// keeps its chunks.
//
// In a clone, what is not materialized yet counts as the clone shows it:
// its files, sizes and logical bytes, and its chunks as referenced (never
// as the subtree's own: its origin, or the clone's pin, holds them). Its
// records are its origin's, so they are not in MetaBytes.
func (v *FS) Usage(ctx context.Context, path string) (ops.Usage, error) {
	if err := v.flushBelow(path); err != nil {
		return ops.Usage{}, err
	}
	defer v.pinReads.begin()() // stubs are read through their pins
	snap := v.meta.Snapshot()
	defer snap.Close()
	top, err := v.viewPath(snap, path)
	if err != nil {
		return ops.Usage{}, err
	}
	u, err := usageAt(ctx, snap, top)
	u.Path = path
	return u, err
}

// usageAt walks the subtree at top as snap shows it.
func usageAt(ctx context.Context, snap meta.Reader, top vnode) (ops.Usage, error) {
	w := usageWalk{ctx: ctx, r: snap, tally: content.NewRefTally(), links: map[nodeID]uint32{}, nodes: map[nodeID]vnode{}}
	var err error
	if isDir(top.n.Mode) {
		err = w.dirs(top)
	} else {
		w.links[top.id()], w.nodes[top.id()] = 1, top
	}
	if err == nil {
		err = w.files()
	}
	if err != nil {
		return ops.Usage{}, err
	}
	if w.u.ChunkUsage, err = w.tally.Sum(snap); err != nil {
		return ops.Usage{}, err
	}
	w.u.DedupRatio = ratio(w.u.LogicalBytes, w.u.RawBytes)
	w.u.CompressRatio = ratio(w.u.RawBytes, w.u.PhysicalBytes)
	return w.u, nil
}

// ratio is a/b, or 1 when there is nothing to divide.
func ratio(a, b int64) float64 {
	if a == 0 || b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

type usageWalk struct {
	ctx   context.Context
	r     meta.Reader
	tally *content.RefTally
	links map[nodeID]uint32 // non-directories found: their links inside
	nodes map[nodeID]vnode
	u     ops.Usage
}

// nodeID tells nodes apart: an inode as of a pin (0: live).
type nodeID struct{ pin, ino uint64 }

func (x vnode) id() nodeID { return nodeID{x.pin, x.ino} }

// dirs walks the directories of the subtree at top, breadth first,
// counting the links to everything else.
func (w *usageWalk) dirs(top vnode) error {
	queue := []vnode{top}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		if err := w.ctx.Err(); err != nil {
			return err
		}
		w.u.Dirs++
		if dir.pin == 0 {
			if err := w.inodeRecords(dir.ino); err != nil {
				return err
			}
		}
		if dir.own() { // the entries' size; children reads them again
			lower, upper := schema.DirentRange(dir.ino)
			if err := w.scan(lower, upper, nil); err != nil {
				return err
			}
		}
		names, kids, err := dir.children()
		if err != nil {
			return fmt.Errorf("directory %d: %w", dir.ino, err)
		}
		for _, name := range names {
			c := kids[name]
			if isDir(c.n.Mode) {
				queue = append(queue, c)
			} else {
				w.links[c.id()]++
				w.nodes[c.id()] = c
			}
		}
	}
	return nil
}

// files tallies the extents of every non-directory found.
func (w *usageWalk) files() error {
	for id, links := range w.links {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		x := w.nodes[id]
		src, err := x.source()
		if err != nil {
			return fmt.Errorf("inode %d: %w", x.ino, err)
		}
		fe, err := w.tally.AddFile(src.r, src.ino, x.own() && links >= x.n.Nlink, false)
		if err != nil {
			return err
		}
		w.u.Files++
		w.u.SizeBytes += x.n.Size
		w.u.LogicalBytes += fe.Mapped
		if x.own() {
			w.u.MetaBytes += fe.RecordBytes
		}
		if x.pin == 0 {
			if err := w.inodeRecords(x.ino); err != nil {
				return err
			}
		}
	}
	return nil
}

// inodeRecords counts the size of ino's own records: the inode, its
// back-references and xattrs. (A directory's entries count as it is
// walked, a file's extents as they are tallied.)
func (w *usageWalk) inodeRecords(ino uint64) error {
	rec, err := w.r.Get(schema.InodeKey(ino))
	if err != nil {
		return fmt.Errorf("inode %d: %w", ino, err)
	}
	w.u.MetaBytes += int64(len(schema.InodeKey(ino)) + len(rec))
	lower, upper := schema.ParentRange(ino)
	if err := w.scan(lower, upper, nil); err != nil {
		return err
	}
	lower, upper = schema.XattrRange(ino)
	return w.scan(lower, upper, nil)
}

// scan counts the size of the records in [lower, upper) and hands each to
// fn, if set.
func (w *usageWalk) scan(lower, upper []byte, fn func(k, v []byte) error) error {
	it, err := w.r.NewIter(lower, upper)
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		w.u.MetaBytes += int64(len(it.Key()) + len(it.Value()))
		if fn == nil {
			continue
		}
		if err := fn(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}
