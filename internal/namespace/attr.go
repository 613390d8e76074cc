package namespace

import (
	"math"
	"syscall"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// SetAttr implements vfs.FS: chmod, chown, truncate and utimensat.
func (v *FS) SetAttr(c vfs.Caller, ino uint64, in vfs.SetAttr) (vfs.Attr, error) {
	if in.SetSize && (in.Size < 0 || in.Size > maxFileSize) {
		return vfs.Attr{}, syscall.EINVAL
	}
	l := v.locks.of(ino)
	l.Lock()
	defer l.Unlock()
	if a, held, err := v.holdAttrs(ino, in); held || err != nil {
		return a, v.errno("setattr", err)
	}
	// Buffered writes are committed first so that their size and times do
	// not later overwrite what this call sets.
	if err := v.flushOpenLocked(ino); err != nil {
		return vfs.Attr{}, v.errno("setattr", err)
	}
	var n schema.Inode
	err := v.materializing(func() error {
		tx, err := v.begin()
		if err != nil {
			return err
		}
		if n, err = v.setAttr(tx, ino, in); err != nil {
			tx.Abort()
			return err
		}
		return tx.Commit(false)
	})
	if err != nil {
		return vfs.Attr{}, v.errno("setattr", err)
	}
	return toAttr(ino, &n), nil
}

func (v *FS) setAttr(tx *content.Tx, ino uint64, in vfs.SetAttr) (schema.Inode, error) {
	n, err := loadInode(tx.Batch(), ino)
	if err != nil {
		return n, err
	}
	if err := v.checkWritable(&n); err != nil {
		return n, err
	}
	if in.SetSize {
		if err := needOwn(ino, &n); err != nil {
			return n, err
		}
	}
	t := now()
	if in.SetMode {
		n.Mode = n.Mode&syscall.S_IFMT | in.Mode&0o7777
	}
	if in.SetUid {
		n.Uid = in.Uid
	}
	if in.SetGid {
		n.Gid = in.Gid
	}
	if in.SetSize {
		if isDir(n.Mode) {
			return n, syscall.EISDIR
		}
		if n.Mode&syscall.S_IFMT != syscall.S_IFREG {
			return n, syscall.EINVAL
		}
		if in.Size < n.Size {
			tx.Release()
			mapped, err := tx.Punch(ino, in.Size, math.MaxInt64)
			if err != nil {
				return n, err
			}
			n.Mapped += mapped
		}
		if in.Size != n.Size {
			n.Mtime = t
		}
		n.Size = in.Size
		if err := tx.Journal(ino, schema.OpData); err != nil {
			return n, err
		}
	}
	if in.SetAtime {
		n.Atime = timeOrNow(in.Atime.UnixNano(), in.Atime.IsZero(), t)
	}
	if in.SetMtime {
		n.Mtime = timeOrNow(in.Mtime.UnixNano(), in.Mtime.IsZero(), t)
	}
	n.Ctime = t
	if err := tx.Journal(ino, schema.OpAttr); err != nil {
		return n, err
	}
	return n, saveInode(tx, ino, &n)
}

func timeOrNow(ns int64, isNow bool, t int64) int64 {
	if isNow {
		return t
	}
	return ns
}

// flushOpenLocked commits ino's buffered writes if it is open; the caller
// holds ino's lock.
func (v *FS) flushOpenLocked(ino uint64) error {
	v.filesMu.Lock()
	f := v.files[ino]
	v.filesMu.Unlock()
	if f == nil {
		return nil
	}
	if err := v.flushLocked(f, true); err != nil {
		return err
	}
	v.setPending(f, false)
	return nil
}
