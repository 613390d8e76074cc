package namespace

import (
	"errors"
	"path"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// removeOrphans deletes inodes that were unlinked while open when the
// previous daemon stopped: nobody can open them any more. On a volume
// several hosts mount, one another host has open stays (keepOrphan).
func (v *FS) removeOrphans() error {
	it, err := v.meta.NewIter(schema.OrphanRange())
	if err != nil {
		return err
	}
	var inos []uint64
	for it.First(); it.Valid(); it.Next() {
		ino, err := schema.OrphanIno(it.Key())
		if err != nil {
			it.Close()
			return err
		}
		inos = append(inos, ino)
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, ino := range inos {
		if err := v.removeOrphan(ino); err != nil {
			return err
		}
	}
	return nil
}

// removeOrphan deletes orphan ino unless it is open here or on another
// host, or is no orphan any more: the list was read outside this
// transaction, and on a volume several hosts mount each host's reaper
// lists the same orphans (deleting one again failed, and the sweep
// stopped there until its next round).
func (v *FS) removeOrphan(ino uint64) error {
	tx, err := v.begin()
	if err != nil {
		return err
	}
	if _, err := tx.Batch().Get(schema.OrphanKey(ino)); err != nil {
		tx.Abort()
		if errors.Is(err, meta.ErrNotFound) {
			return nil // deleted meanwhile
		}
		return err
	}
	if keep, err := v.keepOrphan(tx, ino); err != nil || keep {
		tx.Abort() // open here or on another host (or unknown): it stays
		return err
	}
	if err := v.deleteInode(tx, ino); err != nil {
		tx.Abort()
		return err
	}
	if err := tx.Commit(false); err != nil {
		return err
	}
	v.log.Info("removed orphan inode", "ino", ino)
	return nil
}

// pathOf names one path of ino for log messages, from its back-references.
func (v *FS) pathOf(ino uint64) string {
	p := ""
	for depth := 0; depth < 256 && ino != vfs.RootIno; depth++ {
		parent, name, err := firstName(v.meta, ino)
		if err != nil {
			return "?"
		}
		if parent == 0 {
			return path.Join("<unlinked>", p)
		}
		p = path.Join(name, p)
		ino = parent
	}
	return "/" + p
}
