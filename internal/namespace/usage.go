package namespace

import (
	"context"
	"fmt"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Usage is the space a subtree uses ("doppel df PATH"). Chunk figures
// count each distinct chunk the subtree references once; the exclusive
// ones are what deleting the subtree would free.
type Usage struct {
	Path         string `json:"path"`
	Files        int64  `json:"files"`         // distinct inodes other than directories
	Dirs         int64  `json:"dirs"`          // directories, the top one included
	SizeBytes    int64  `json:"size_bytes"`    // sum of file sizes, holes included
	LogicalBytes int64  `json:"logical_bytes"` // bytes the files' extents map, holes excluded
	content.ChunkUsage
	// MetaBytes is the size of the subtree's metadata records (inodes,
	// entries, back-references, extents, xattrs) before the metadata
	// store's compression.
	MetaBytes     int64   `json:"meta_bytes"`
	DedupRatio    float64 `json:"dedup_ratio"`       // logical / raw
	CompressRatio float64 `json:"compression_ratio"` // raw / physical
}

// Usage reports the space used by the subtree at path ("/"-rooted, inside
// the volume). Buffered writes below path are committed first. The walk
// reads one metadata snapshot, so it sees a consistent state and holds no
// lock while writers go on.
//
// A file counts once however many of its links the subtree holds. Its
// references count as the subtree's own only if the subtree holds all its
// links: a file with a link elsewhere survives the subtree's deletion and
// keeps its chunks.
func (v *Volume) Usage(ctx context.Context, path string) (Usage, error) {
	if err := v.flushBelow(path); err != nil {
		return Usage{}, err
	}
	snap := v.meta.Snapshot()
	defer snap.Close()
	top, n, err := resolvePath(snap, path)
	if err != nil {
		return Usage{}, err
	}
	w := usageWalk{ctx: ctx, r: snap, tally: content.NewRefTally(), links: map[uint64]uint32{}}
	w.u.Path = path
	if isDir(n.Mode) {
		err = w.dirs(top)
	} else {
		w.links[top] = 1
	}
	if err == nil {
		err = w.files()
	}
	if err != nil {
		return Usage{}, err
	}
	if w.u.ChunkUsage, err = w.tally.Sum(snap); err != nil {
		return Usage{}, err
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
	links map[uint64]uint32 // non-directories found: their links inside
	u     Usage
}

// dirs walks the directories of the subtree at top, breadth first,
// counting the links to everything else.
func (w *usageWalk) dirs(top uint64) error {
	queue := []uint64{top}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		if err := w.ctx.Err(); err != nil {
			return err
		}
		w.u.Dirs++
		if err := w.inodeRecords(dir); err != nil {
			return err
		}
		lower, upper := schema.DirentRange(dir)
		err := w.scan(lower, upper, func(k, val []byte) error {
			d, err := schema.DecodeDirent(val)
			if err != nil {
				return fmt.Errorf("entry %q of directory %d: %w", k, dir, err)
			}
			if isDir(d.Type) {
				queue = append(queue, d.Ino)
			} else {
				w.links[d.Ino]++
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// files tallies the extents of every non-directory found.
func (w *usageWalk) files() error {
	for ino, links := range w.links {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		n, err := loadInode(w.r, ino)
		if err != nil {
			return fmt.Errorf("inode %d: %w", ino, err)
		}
		fe, err := w.tally.AddFile(w.r, ino, links >= n.Nlink, false)
		if err != nil {
			return err
		}
		w.u.Files++
		w.u.SizeBytes += n.Size
		w.u.LogicalBytes += fe.Mapped
		w.u.MetaBytes += fe.RecordBytes
		if err := w.inodeRecords(ino); err != nil {
			return err
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
