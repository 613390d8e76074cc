package namespace

import (
	"errors"
	"syscall"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// Rename implements vfs.FS, with renameat2's NOREPLACE and EXCHANGE.
func (v *FS) Rename(oldParent uint64, oldName string, newParent uint64, newName string, flags uint32) error {
	if flags&^(vfs.RenameNoReplace|vfs.RenameExchange) != 0 || flags == vfs.RenameNoReplace|vfs.RenameExchange {
		return syscall.EINVAL
	}
	if err := checkName(newName); err != nil {
		return err
	}
	return v.errno("rename", v.materializing(func() error {
		tx, err := v.begin()
		if err != nil {
			return err
		}
		if err := v.rename(tx, oldParent, oldName, newParent, newName, flags); err != nil {
			tx.Abort()
			return err
		}
		return tx.Commit(false)
	}))
}

func (v *FS) rename(tx *content.Tx, op uint64, on string, np uint64, nn string, flags uint32) error {
	b := tx.Batch()
	for _, dir := range []uint64{op, np} {
		n, err := loadInode(b, dir)
		if err != nil {
			return err
		}
		if err := v.checkWritable(&n); err != nil {
			return err
		}
	}
	src, err := lookupEntry(b, op, on)
	if err != nil {
		return err
	}
	dst, err := lookupEntry(b, np, nn)
	dstExists := err == nil
	if err != nil && !errors.Is(err, syscall.ENOENT) {
		return err
	}
	switch {
	case flags&vfs.RenameExchange != 0 && !dstExists:
		return syscall.ENOENT
	case flags&vfs.RenameNoReplace != 0 && dstExists:
		return syscall.EEXIST
	case op == np && on == nn:
		return nil
	case dstExists && dst.Ino == src.Ino && flags&vfs.RenameExchange == 0:
		return nil // two names of one inode: POSIX says do nothing
	}
	// A directory may not move into its own subtree.
	if src.Type == syscall.S_IFDIR && op != np {
		if inside, err := isAncestor(b, src.Ino, np); err != nil {
			return err
		} else if inside {
			return syscall.EINVAL
		}
	}
	if op != np && (src.Type == syscall.S_IFDIR || flags&vfs.RenameExchange != 0 && dst.Type == syscall.S_IFDIR) {
		tx.Moved() // the clones above its subtree may change
	}
	if flags&vfs.RenameExchange != 0 {
		if dst.Type == syscall.S_IFDIR && op != np {
			if inside, err := isAncestor(b, dst.Ino, op); err != nil {
				return err
			} else if inside {
				return syscall.EINVAL
			}
		}
		return exchange(tx, op, on, src, np, nn, dst)
	}
	if dstExists {
		if err := checkReplace(b, src, dst); err != nil {
			return err
		}
		if err := v.unlinkForRename(tx, np, nn, dst); err != nil {
			return err
		}
	}
	return move(tx, op, on, src, np, nn)
}

// checkReplace applies rename(2)'s rules for replacing dst with src.
func checkReplace(r meta.Reader, src, dst schema.Dirent) error {
	switch {
	case src.Type == syscall.S_IFDIR && dst.Type != syscall.S_IFDIR:
		return syscall.ENOTDIR
	case src.Type != syscall.S_IFDIR && dst.Type == syscall.S_IFDIR:
		return syscall.EISDIR
	case dst.Type == syscall.S_IFDIR:
		empty, err := dirEmpty(r, dst.Ino)
		if err != nil {
			return err
		}
		if !empty {
			return syscall.ENOTEMPTY
		}
	}
	return nil
}

func (v *FS) unlinkForRename(tx *content.Tx, np uint64, nn string, dst schema.Dirent) error {
	dir, err := loadInode(tx.Batch(), np)
	if err != nil {
		return err
	}
	if err := needOwnNames(tx, dst.Ino); err != nil {
		return err
	}
	if err := removeEntry(tx, &dir, np, nn, dst.Ino, dst.Type); err != nil {
		return err
	}
	return v.dropLink(tx, dst.Ino)
}

// move takes src's entry out of op and puts it into np as nn.
func move(tx *content.Tx, op uint64, on string, src schema.Dirent, np uint64, nn string) error {
	b := tx.Batch()
	oldDir, err := loadInode(b, op)
	if err != nil {
		return err
	}
	if err := removeEntry(tx, &oldDir, op, on, src.Ino, src.Type); err != nil {
		return err
	}
	newDir, err := loadInode(b, np) // reload: it may be oldDir
	if err != nil {
		return err
	}
	if !isDir(newDir.Mode) {
		return syscall.ENOTDIR
	}
	if err := addEntry(tx, &newDir, np, nn, src.Ino, src.Type); err != nil {
		return err
	}
	return touchCtime(tx, src.Ino)
}

// exchange swaps two entries atomically.
func exchange(tx *content.Tx, op uint64, on string, src schema.Dirent, np uint64, nn string, dst schema.Dirent) error {
	b := tx.Batch()
	for _, e := range []struct {
		dir  uint64
		name string
		was  schema.Dirent
		now  schema.Dirent
	}{{op, on, src, dst}, {np, nn, dst, src}} {
		if err := dropName(b, e.dir, e.name, e.was.Ino); err != nil {
			return err
		}
		if err := setName(b, e.dir, e.name, e.now); err != nil {
			return err
		}
		tx.Relinked(e.now.Ino)
		if err := tx.JournalName(e.dir, e.name); err != nil {
			return err
		}
	}
	// Moving a directory between parents moves a ".." link too.
	delta := int32(0)
	if src.Type == syscall.S_IFDIR {
		delta--
	}
	if dst.Type == syscall.S_IFDIR {
		delta++
	}
	for _, d := range []struct {
		ino   uint64
		delta int32
	}{{op, delta}, {np, -delta}} {
		if op == np && d.ino == np && d.delta < 0 {
			continue // same directory: touch once
		}
		dir, err := loadInode(b, d.ino)
		if err != nil {
			return err
		}
		if op != np {
			dir.Nlink = uint32(int32(dir.Nlink) + d.delta)
		}
		t := now()
		dir.Mtime, dir.Ctime = t, t
		if err := tx.Journal(d.ino, schema.OpDirents); err != nil {
			return err
		}
		if err := saveInode(tx, d.ino, &dir); err != nil {
			return err
		}
	}
	if err := touchCtime(tx, src.Ino); err != nil {
		return err
	}
	return touchCtime(tx, dst.Ino)
}

func touchCtime(tx *content.Tx, ino uint64) error {
	n, err := loadInode(tx.Batch(), ino)
	if err != nil {
		return err
	}
	n.Ctime = now()
	if err := tx.Journal(ino, schema.OpLink); err != nil {
		return err
	}
	return saveInode(tx, ino, &n)
}

// isAncestor reports whether ino lies in the subtree rooted at dir.
func isAncestor(r meta.Reader, dir, ino uint64) (bool, error) {
	for depth := 0; depth < 1<<16; depth++ {
		if ino == dir {
			return true, nil
		}
		if ino == vfs.RootIno {
			return false, nil
		}
		parent, err := parentOf(r, ino)
		if err != nil {
			return false, err
		}
		ino = parent
	}
	return false, errors.New("namespace: directory parent chain too deep or cyclic")
}

// parentOf returns a parent directory of ino from its back-references.
func parentOf(r meta.Reader, ino uint64) (uint64, error) {
	parent, _, err := firstName(r, ino)
	if err == nil && parent == 0 {
		err = syscall.ENOENT
	}
	return parent, err
}
