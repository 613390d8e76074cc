package namespace

import (
	"context"
	"errors"
	"path"
	"syscall"
	"time"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/ops"
	"github.com/doppelfs/doppel/internal/schema"
)

// Clones lists the volume's clones and snapshots. withSpace adds the
// space only each one holds, which walks each clone's own records.
func (v *FS) Clones(ctx context.Context, withSpace bool) ([]ops.CloneInfo, error) {
	var out []ops.CloneInfo
	err := eachClone(v.meta, func(ino uint64, rec schema.Clone) error {
		c := ops.CloneInfo{Ino: ino, Origin: rec.OriginPath, Created: time.Unix(0, rec.Created), Version: rec.Pin,
			Excludes: rec.Excludes, ReadOnly: rec.ReadOnly, Lazy: rec.Lazy, Done: rec.Done, Stubs: rec.Stubs,
			PinHeld: v.pinHeld(rec.Pin)}
		if !rec.Removed {
			c.Path, _ = pathOf(v.meta, ino)
		}
		switch {
		case rec.Removed:
			c.State = "removing"
		case !c.PinHeld:
			c.State = "materialized"
		case rec.Lazy:
			c.State = "lazy"
		default:
			c.State = "materializing"
		}
		if withSpace && !rec.Removed {
			u, err := v.usageOf(ctx, ino)
			if err != nil {
				c.SpaceError = err.Error()
			}
			c.Exclusive, c.MetaBytes = u.ExclusiveBytes, u.MetaBytes
		}
		out = append(out, c)
		return nil
	})
	return out, err
}

// usageOf is ops.Usage of the subtree at ino.
func (v *FS) usageOf(ctx context.Context, ino uint64) (ops.Usage, error) {
	defer v.pinReads.begin()()
	snap := v.meta.Snapshot()
	defer snap.Close()
	top, err := v.vnodeOf(snap, ino)
	if err != nil {
		return ops.Usage{}, err
	}
	top.excl = top.n.Excl
	return usageAt(ctx, snap, top)
}

// RemoveClone detaches the clone (or snapshot) at path at once and frees
// its tree in the background: only the space nothing else references
// returns. A crash resumes the removal at the next mount.
func (v *FS) RemoveClone(p string) error {
	dir, name := splitPath(p)
	if name == "" {
		return &pathError{p, syscall.EINVAL}
	}
	parent, err := v.lookupPath(dir)
	if err != nil {
		return &pathError{dir, err}
	}
	err = v.materializing(func() error {
		tx, err := v.begin()
		if err != nil {
			return err
		}
		if err := v.detachClone(tx, parent, name); err != nil {
			tx.Abort()
			return err
		}
		return tx.Commit(false)
	})
	if err != nil {
		return &pathError{p, err}
	}
	v.wakeReaper()
	return nil
}

// detachClone takes a clone's root out of its directory and marks the
// clone removed; the reaper frees the tree.
func (v *FS) detachClone(tx *content.Tx, parent uint64, name string) error {
	b := tx.Batch()
	d, err := lookupEntry(b, parent, name)
	if err != nil {
		return err
	}
	rec, err := loadClone(b, d.Ino)
	if errors.Is(err, meta.ErrNotFound) {
		return errNotClone
	}
	if err != nil {
		return err
	}
	dir, err := loadInode(b, parent)
	if err != nil {
		return err
	}
	if err := v.checkWritable(&dir); err != nil {
		return err
	}
	if err := removeEntry(tx, &dir, parent, name, d.Ino, d.Type); err != nil {
		return err
	}
	rec.Removed = true
	return saveClone(b, d.Ino, rec)
}

var errNotClone = errors.New("not the root of a clone or snapshot (rmclone removes only those; use rm -r)")

// splitPath splits a "/"-rooted path into its directory and last name.
func splitPath(p string) (dir, name string) { return path.Split(path.Clean(p)) }

// EntryOf returns the directory and name a path's last component is in,
// for the frontend to invalidate a cached entry.
func (v *FS) EntryOf(p string) (uint64, string, bool) {
	dir, name := splitPath(p)
	parent, err := v.lookupPath(dir)
	return parent, name, err == nil && name != ""
}
