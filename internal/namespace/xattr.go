package namespace

import (
	"strings"
	"syscall"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

const (
	xattrNameMax  = schema.MaxNameBytes // XATTR_NAME_MAX
	xattrValueMax = 64 << 10
)

// GetXattr implements vfs.FS.
func (v *FS) GetXattr(ino uint64, name string) ([]byte, error) {
	if len(name) > xattrNameMax {
		return nil, syscall.ERANGE
	}
	defer v.pinReads.begin()()
	r, ino, err := v.xattrSource(ino)
	if err != nil {
		return nil, v.errno("getxattr", err)
	}
	val, found, err := readXattr(r, ino, name)
	if err == nil && !found {
		if _, err := loadInode(r, ino); err != nil {
			return nil, v.errno("getxattr", err)
		}
		return nil, syscall.ENODATA
	}
	return val, v.errno("getxattr", err)
}

// ListXattr implements vfs.FS.
func (v *FS) ListXattr(ino uint64) ([]string, error) {
	defer v.pinReads.begin()()
	r, ino, err := v.xattrSource(ino)
	if err != nil {
		return nil, v.errno("listxattr", err)
	}
	var names []string
	err = eachXattr(r, ino, func(name string, _ []byte) error {
		names = append(names, name)
		return nil
	})
	if err != nil {
		return nil, v.errno("listxattr", err)
	}
	return names, nil
}

// SetXattr implements vfs.FS.
func (v *FS) SetXattr(ino uint64, name string, value []byte, flags uint32) error {
	if err := checkXattr(name, value); err != nil {
		return err
	}
	if name == PolicyXattr {
		defer v.refreshChunker(ino)
	}
	if err := v.opt.Headroom.ForMeta(); err != nil {
		return v.errno("setxattr", err)
	}
	return v.xattrTx("setxattr", ino, func(b meta.Batch) error {
		_, exists, err := readXattr(b, ino, name)
		if err != nil {
			return err
		}
		if flags&vfs.XattrCreate != 0 && exists {
			return syscall.EEXIST
		}
		if flags&vfs.XattrReplace != 0 && !exists {
			return syscall.ENODATA
		}
		return setXattr(b, ino, name, value)
	})
}

// checkXattr validates an extended attribute before it is set.
func checkXattr(name string, value []byte) error {
	switch {
	case name == "":
		return syscall.EINVAL
	case len(name) > xattrNameMax:
		return syscall.ERANGE
	case len(value) > xattrValueMax:
		return syscall.E2BIG
	case name == PolicyXattr:
		return checkPolicyXattr(value)
	case strings.HasPrefix(name, "system.posix_acl_"):
		// doppel does not implement POSIX ACLs. Kept as plain attributes
		// they would lose the mode: cp -a sets a new file's mode by
		// writing system.posix_acl_access, and the kernel (no
		// FUSE_POSIX_ACL) passes it on as is. EOPNOTSUPP, as on a file
		// system mounted noacl, makes such tools fall back to chmod.
		return syscall.EOPNOTSUPP
	}
	return nil
}

// RemoveXattr implements vfs.FS.
func (v *FS) RemoveXattr(ino uint64, name string) error {
	if name == PolicyXattr {
		defer v.refreshChunker(ino)
	}
	return v.xattrTx("removexattr", ino, func(b meta.Batch) error {
		if _, found, err := readXattr(b, ino, name); err != nil {
			return err
		} else if !found {
			return syscall.ENODATA
		}
		return deleteXattr(b, ino, name)
	})
}

// xattrTx runs change and stamps the inode's ctime in one transaction.
func (v *FS) xattrTx(op string, ino uint64, change func(meta.Batch) error) error {
	return v.errno(op, v.materializing(func() error { return v.xattrTxOnce(ino, change) }))
}

func (v *FS) xattrTxOnce(ino uint64, change func(meta.Batch) error) error {
	tx, err := v.begin()
	if err != nil {
		return err
	}
	n, err := loadInode(tx.Batch(), ino)
	if err == nil {
		err = v.checkWritable(&n)
	}
	if err == nil {
		err = needOwn(ino, &n)
	}
	if err == nil {
		err = change(tx.Batch())
	}
	if err == nil {
		n.Ctime = now()
		err = tx.Journal(ino, schema.OpAttr)
	}
	if err == nil {
		err = saveInode(tx, ino, &n)
	}
	if err != nil {
		tx.Abort()
		return err
	}
	return tx.Commit(false)
}

// refreshChunker makes an open file's writes follow a changed policy.
func (v *FS) refreshChunker(ino uint64) {
	v.filesMu.Lock()
	f := v.files[ino]
	v.filesMu.Unlock()
	if f == nil {
		return
	}
	ch := v.fileChunker(ino)
	l := v.locks.of(ino)
	l.Lock()
	f.chunker = ch
	l.Unlock()
}
