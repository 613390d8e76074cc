package namespace

import (
	"errors"
	"syscall"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// nameMax is NAME_MAX, which the record keys are sized for.
const nameMax = schema.MaxNameBytes

func checkName(name string) error {
	switch {
	case len(name) > nameMax:
		return syscall.ENAMETOOLONG
	case name == "" || name == "." || name == "..":
		return syscall.EINVAL
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '/' || name[i] == 0 {
			return syscall.EINVAL
		}
	}
	return nil
}

// lookupEntry reads entry name of dir; a missing entry is ENOENT.
func lookupEntry(r meta.Reader, dir uint64, name string) (schema.Dirent, error) {
	d, found, err := readEntry(r, dir, name)
	if err == nil && !found {
		// A stub directory has no entries of its own yet.
		n, lerr := loadInode(r, dir)
		if lerr == nil && n.Stub {
			return schema.Dirent{}, &stubError{dir}
		}
		if lerr == nil {
			// It may have been materialized between the two reads (the
			// background materializer): once it is no stub, its entries
			// are there, so look once more.
			d, found, err = readEntry(r, dir, name)
		}
	}
	if err == nil && !found {
		err = syscall.ENOENT
	}
	return d, err
}

// entryIn is lookupEntry for a directory whose record dn the caller has
// loaded already: it saves loading it again when name does not exist.
func entryIn(r meta.Reader, dir uint64, dn *schema.Inode, name string) (schema.Dirent, error) {
	if err := needOwn(dir, dn); err != nil {
		return schema.Dirent{}, err
	}
	d, found, err := readEntry(r, dir, name)
	if err == nil && !found {
		err = syscall.ENOENT
	}
	return d, err
}

// Lookup implements vfs.FS.
func (v *FS) Lookup(parent uint64, name string) (vfs.Attr, error) {
	if len(name) > nameMax {
		return vfs.Attr{}, syscall.ENAMETOOLONG
	}
	var d schema.Dirent
	err := v.materializing(func() (err error) {
		d, err = lookupEntry(v.meta, parent, name)
		return err
	})
	if err != nil {
		return vfs.Attr{}, v.errno("lookup", err)
	}
	a, err := v.attr(d.Ino)
	return a, v.errno("lookup", err)
}

// addEntry links ino under dir as name and updates the directory.
func addEntry(tx *content.Tx, dir *schema.Inode, dirIno uint64, name string, ino uint64, mode uint32) error {
	b := tx.Batch()
	if err := setName(b, dirIno, name, schema.Dirent{Ino: ino, Type: mode & syscall.S_IFMT}); err != nil {
		return err
	}
	tx.Relinked(ino)
	t := now()
	dir.Mtime, dir.Ctime = t, t
	if isDir(mode) {
		dir.Nlink++
	}
	if err := tx.JournalName(dirIno, name); err != nil {
		return err
	}
	return saveInode(tx, dirIno, dir)
}

// removeEntry unlinks name (which names ino) from dir.
func removeEntry(tx *content.Tx, dir *schema.Inode, dirIno uint64, name string, ino uint64, mode uint32) error {
	b := tx.Batch()
	if err := dropName(b, dirIno, name, ino); err != nil {
		return err
	}
	tx.Relinked(ino)
	t := now()
	dir.Mtime, dir.Ctime = t, t
	if isDir(mode) {
		dir.Nlink--
	}
	if err := tx.JournalName(dirIno, name); err != nil {
		return err
	}
	return saveInode(tx, dirIno, dir)
}

// newNode creates an inode named name in parent inside tx. policy is the
// chunking override it inherited (nil: none).
func (v *FS) newNode(tx *content.Tx, c vfs.Caller, parent uint64, name string, n schema.Inode) (ino uint64, _ schema.Inode, policy []byte, err error) {
	if err := checkName(name); err != nil {
		return 0, n, nil, err
	}
	if err := v.opt.Headroom.ForMeta(); err != nil {
		return 0, n, nil, err
	}
	b := tx.Batch()
	dir, err := loadInode(b, parent)
	if err != nil {
		return 0, n, nil, err
	}
	if !isDir(dir.Mode) {
		return 0, n, nil, syscall.ENOTDIR
	}
	if err := v.checkWritable(&dir); err != nil {
		return 0, n, nil, err
	}
	if _, err := entryIn(b, parent, &dir, name); err == nil {
		return 0, n, nil, syscall.EEXIST
	} else if !errors.Is(err, syscall.ENOENT) {
		return 0, n, nil, err
	}
	ino, err = allocIno(tx)
	if err != nil {
		return 0, n, nil, err
	}
	t := now()
	n.Uid, n.Gid = c.Uid, c.Gid
	if dir.Mode&syscall.S_ISGID != 0 { // BSD group semantics of setgid dirs
		n.Gid = dir.Gid
		if isDir(n.Mode) {
			n.Mode |= syscall.S_ISGID
		}
	}
	n.Atime, n.Mtime, n.Ctime, n.Btime = t, t, t, t
	if n.Nlink == 0 {
		n.Nlink = 1
	}
	if err := saveInode(tx, ino, &n); err != nil {
		return 0, n, nil, err
	}
	tx.AddInodes(1)
	if err := tx.Journal(ino, schema.OpCreate); err != nil {
		return 0, n, nil, err
	}
	if policy, err = inheritPolicy(tx, parent, ino); err != nil {
		return 0, n, nil, err
	}
	return ino, n, policy, addEntry(tx, &dir, parent, name, ino, n.Mode)
}

// create runs newNode in its own transaction.
func (v *FS) create(op string, c vfs.Caller, parent uint64, name string, n schema.Inode) (a vfs.Attr, err error) {
	err = v.materializing(func() (err error) {
		a, err = v.createOnce(op, c, parent, name, n)
		return err
	})
	return a, v.errno(op, err)
}

func (v *FS) createOnce(op string, c vfs.Caller, parent uint64, name string, n schema.Inode) (vfs.Attr, error) {
	tx, err := v.begin()
	if err != nil {
		return vfs.Attr{}, err
	}
	ino, n, _, err := v.newNode(tx, c, parent, name, n)
	if err != nil {
		tx.Abort()
		return vfs.Attr{}, err
	}
	if err := tx.Commit(false); err != nil {
		return vfs.Attr{}, err
	}
	return toAttr(ino, &n), nil
}

// Mkdir implements vfs.FS.
func (v *FS) Mkdir(c vfs.Caller, parent uint64, name string, mode uint32) (vfs.Attr, error) {
	return v.create("mkdir", c, parent, name, schema.Inode{Mode: syscall.S_IFDIR | mode&0o7777, Nlink: 2})
}

// Mknod implements vfs.FS.
func (v *FS) Mknod(c vfs.Caller, parent uint64, name string, mode, rdev uint32) (vfs.Attr, error) {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFREG, syscall.S_IFIFO, syscall.S_IFCHR, syscall.S_IFBLK, syscall.S_IFSOCK:
	case 0:
		mode |= syscall.S_IFREG
	default:
		return vfs.Attr{}, syscall.EINVAL
	}
	return v.create("mknod", c, parent, name, schema.Inode{Mode: mode, Rdev: rdev})
}

// Symlink implements vfs.FS.
func (v *FS) Symlink(c vfs.Caller, parent uint64, name, target string) (vfs.Attr, error) {
	if len(target) > 4095 {
		return vfs.Attr{}, syscall.ENAMETOOLONG
	}
	return v.create("symlink", c, parent, name, schema.Inode{Mode: syscall.S_IFLNK | 0o777, Target: target, Size: int64(len(target))})
}

// Readlink implements vfs.FS.
func (v *FS) Readlink(ino uint64) (string, error) {
	n, err := loadInode(v.meta, ino)
	if err != nil {
		return "", v.errno("readlink", err)
	}
	if n.Mode&syscall.S_IFMT != syscall.S_IFLNK {
		return "", syscall.EINVAL
	}
	return n.Target, nil
}

// Link implements vfs.FS.
func (v *FS) Link(ino, parent uint64, name string) (vfs.Attr, error) {
	if err := checkName(name); err != nil {
		return vfs.Attr{}, err
	}
	err := v.materializing(func() error {
		tx, err := v.begin()
		if err != nil {
			return err
		}
		if err = v.link(tx, ino, parent, name); err != nil {
			tx.Abort()
			return err
		}
		return tx.Commit(false)
	})
	if err != nil {
		return vfs.Attr{}, v.errno("link", err)
	}
	// Read again, with any buffered changes, only now: the inode's lock
	// may be held by a writer waiting for the transaction lock.
	a, err := v.attr(ino)
	return a, v.errno("link", err)
}

func (v *FS) link(tx *content.Tx, ino, parent uint64, name string) error {
	if err := v.opt.Headroom.ForMeta(); err != nil {
		return err
	}
	b := tx.Batch()
	n, err := loadInode(b, ino)
	if err != nil {
		return err
	}
	if isDir(n.Mode) {
		return syscall.EPERM
	}
	if n.Nlink == 0 {
		return syscall.ENOENT
	}
	if err := needOwn(ino, &n); err != nil {
		return err // a stub's names mirror its origin's: see needOwnNames
	}
	dir, err := loadInode(b, parent)
	if err != nil {
		return err
	}
	if err := v.checkWritable(&dir); err != nil {
		return err
	}
	if _, err := entryIn(b, parent, &dir, name); err == nil {
		return syscall.EEXIST
	} else if !errors.Is(err, syscall.ENOENT) {
		return err
	}
	n.Nlink++
	n.Ctime = now()
	if err := saveInode(tx, ino, &n); err != nil {
		return err
	}
	if err := tx.Journal(ino, schema.OpLink); err != nil {
		return err
	}
	return addEntry(tx, &dir, parent, name, ino, n.Mode)
}

// Unlink implements vfs.FS.
func (v *FS) Unlink(parent uint64, name string) error {
	return v.remove("unlink", parent, name, false)
}

// Rmdir implements vfs.FS.
func (v *FS) Rmdir(parent uint64, name string) error {
	return v.remove("rmdir", parent, name, true)
}

func (v *FS) remove(op string, parent uint64, name string, wantDir bool) error {
	if len(name) > nameMax {
		return syscall.ENAMETOOLONG
	}
	return v.errno(op, v.materializing(func() error {
		tx, err := v.begin()
		if err != nil {
			return err
		}
		if err := v.removeIn(tx, parent, name, wantDir); err != nil {
			tx.Abort()
			return err
		}
		return tx.Commit(false)
	}))
}

func (v *FS) removeIn(tx *content.Tx, parent uint64, name string, wantDir bool) error {
	b := tx.Batch()
	d, err := lookupEntry(b, parent, name)
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
	switch {
	case wantDir && d.Type != syscall.S_IFDIR:
		return syscall.ENOTDIR
	case !wantDir && d.Type == syscall.S_IFDIR:
		return syscall.EISDIR
	}
	if wantDir {
		if empty, err := dirEmpty(b, d.Ino); err != nil {
			return err
		} else if !empty {
			return syscall.ENOTEMPTY
		}
	}
	if err := needOwnNames(tx, d.Ino); err != nil {
		return err
	}
	if err := removeEntry(tx, &dir, parent, name, d.Ino, d.Type); err != nil {
		return err
	}
	return v.dropLink(tx, d.Ino)
}

// dropLink removes one name's worth of links from ino and deletes it when
// nothing names it and nothing has it open.
func (v *FS) dropLink(tx *content.Tx, ino uint64) error {
	b := tx.Batch()
	n, err := loadInode(b, ino)
	if err != nil {
		return err
	}
	if isDir(n.Mode) {
		n.Nlink = 0
	} else if n.Nlink > 0 {
		n.Nlink--
	}
	n.Ctime = now()
	if n.Nlink > 0 {
		if err := tx.Journal(ino, schema.OpLink); err != nil {
			return err
		}
		return saveInode(tx, ino, &n)
	}
	keep, err := v.keepOrphan(tx, ino)
	if err != nil {
		return err
	}
	if keep {
		// Open but unlinked (here, or on another host): keep it until
		// the last close; the orphan marker lets the next mount clean up
		// after a crash.
		if err := b.Set(schema.OrphanKey(ino), nil); err != nil {
			return err
		}
		if err := tx.Journal(ino, schema.OpLink); err != nil {
			return err
		}
		return saveInode(tx, ino, &n)
	}
	return v.deleteInode(tx, ino)
}

func dirEmpty(r meta.Reader, ino uint64) (bool, error) {
	if n, err := loadInode(r, ino); err != nil {
		return false, err
	} else if err := needOwn(ino, &n); err != nil {
		return false, err
	}
	any, err := hasEntries(r, ino)
	return !any, err
}

// ReadDir implements vfs.FS.
func (v *FS) ReadDir(ino uint64) ([]vfs.DirEntry, error) {
	var n schema.Inode
	err := v.materializing(func() (err error) {
		if n, err = loadInode(v.meta, ino); err == nil {
			err = needOwn(ino, &n)
		}
		return err
	})
	if err != nil {
		return nil, v.errno("readdir", err)
	}
	if !isDir(n.Mode) {
		return nil, syscall.ENOTDIR
	}
	var out []vfs.DirEntry
	err = eachEntry(v.meta, ino, func(name string, d schema.Dirent) error {
		out = append(out, vfs.DirEntry{Name: name, Ino: d.Ino, Mode: d.Type})
		return nil
	})
	if err != nil {
		return nil, v.errno("readdir", err)
	}
	return out, nil
}
