package namespace

import (
	"sync/atomic"
	"syscall"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// The reaper frees the trees of removed clones (rmclone) in the
// background: directories bottom up, a bounded batch per transaction, so
// foreground work interleaves. A removed clone's record marks its tree
// until the root itself is deleted; a crash resumes at the next mount.

// reapBatch bounds the inodes deleted per transaction.
const reapBatch = 512

func (v *FS) wakeReaper() {
	select {
	case v.reapWake <- struct{}{}:
	default:
	}
}

func (v *FS) reaper() {
	v.worker(v.reapWake, v.reapAll, "freeing a removed clone failed; it resumes at the next mount")
}

// reapAll frees every removed clone whose root still exists (with
// several hosts, while it holds the lease).
func (v *FS) reapAll() error {
	for {
		if !v.leased("reap") {
			return nil
		}
		var roots []uint64
		err := eachClone(v.meta, func(ino uint64, rec schema.Clone) error {
			if rec.Removed {
				if _, err := loadInode(v.meta, ino); err == nil {
					roots = append(roots, ino)
				}
			}
			return nil
		})
		if err != nil || len(roots) == 0 {
			return err
		}
		for _, root := range roots {
			if err := v.reap(root); err != nil {
				return err
			}
		}
	}
}

// reap deletes the detached tree at root, deepest entries first.
func (v *FS) reap(root uint64) error {
	for {
		select {
		case <-v.quit:
			return errQuit
		default:
		}
		batch, err := v.leaves(root, reapBatch)
		if err != nil {
			return err
		}
		if hook := reapHook.Load(); hook != nil {
			(*hook)(root, len(batch))
		}
		tx, err := v.begin()
		if err != nil {
			return err
		}
		for _, e := range batch {
			if err = v.reapEntry(tx, e); err != nil {
				break
			}
		}
		if err == nil && len(batch) == 0 {
			// leaves read outside this transaction: a stub root may
			// have been materialized since (by a materializer's walk
			// that began before rmclone, or through a handle still open
			// in it). Its entries go first, next batch.
			var empty bool
			if empty, err = stubOrEmpty(tx.Batch(), root); err == nil && !empty {
				tx.Abort()
				continue
			}
			if err == nil {
				err = v.deleteInode(tx, root) // the root: the clone goes with it
			}
		}
		if err != nil {
			tx.Abort()
			return err
		}
		if err := tx.Commit(false); err != nil {
			return err
		}
		if len(batch) == 0 {
			return nil
		}
	}
}

// reapHook, when tests set it, runs when the reaper has listed what it
// frees next below root (n entries; none: the root itself), before the
// transaction that frees it.
var reapHook atomic.Pointer[func(root uint64, n int)]

// stubOrEmpty says whether directory ino has no entries of its own: a
// stub, or a directory without entries.
func stubOrEmpty(r meta.Reader, ino uint64) (bool, error) {
	n, err := loadInode(r, ino)
	if err != nil || n.Stub {
		return err == nil, err
	}
	any, err := hasEntries(r, ino)
	return !any, err
}

type reapItem struct {
	dir  uint64
	name string
	d    schema.Dirent
}

// leaves collects up to n entries below root that can go now: files,
// symlinks, specials, stubs (which have no entries of their own) and
// empty directories.
func (v *FS) leaves(root uint64, n int) ([]reapItem, error) {
	var out []reapItem
	var walk func(dir uint64) error
	walk = func(dir uint64) error {
		return eachEntry(v.meta, dir, func(name string, d schema.Dirent) error {
			if len(out) >= n {
				return nil
			}
			if d.Type == syscall.S_IFDIR {
				c, err := loadInode(v.meta, d.Ino)
				if err != nil {
					return err
				}
				if empty, err := dirEmpty(v.meta, d.Ino); err == nil && !empty && !c.Stub {
					return walk(d.Ino)
				}
			}
			out = append(out, reapItem{dir: dir, name: name, d: d})
			return nil
		})
	}
	return out, walk(root)
}

// reapEntry removes one entry of a removed tree; read-only snapshots
// included, since nobody can see it any more.
func (v *FS) reapEntry(tx *content.Tx, e reapItem) error {
	b := tx.Batch()
	// leaves read outside this transaction: a process still working in
	// the removed tree may have renamed or replaced the entry since.
	// The next batch lists what is there now.
	if d, found, err := readEntry(b, e.dir, e.name); err != nil || !found || d.Ino != e.d.Ino {
		return err
	}
	if e.d.Type == syscall.S_IFDIR {
		// leaves read outside this transaction: a stub directory may
		// have been materialized since (by the materializer, or through
		// a handle still open in it). Its entries go first, next batch.
		if empty, err := stubOrEmpty(b, e.d.Ino); err != nil || !empty {
			return err
		}
	}
	dir, err := loadInode(b, e.dir)
	if err != nil {
		return err
	}
	if err := removeEntry(tx, &dir, e.dir, e.name, e.d.Ino, e.d.Type); err != nil {
		return err
	}
	return v.dropLink(tx, e.d.Ino)
}
