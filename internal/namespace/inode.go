package namespace

import (
	"errors"
	"syscall"
	"time"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// loadInode reads an inode record; a missing inode is ENOENT.
func loadInode(r meta.Reader, ino uint64) (schema.Inode, error) {
	v, err := r.Get(schema.InodeKey(ino))
	if errors.Is(err, meta.ErrNotFound) {
		return schema.Inode{}, syscall.ENOENT
	}
	if err != nil {
		return schema.Inode{}, err
	}
	return decodeInode(ino, v)
}

// saveInode writes an inode record, stamped with the transaction's version.
func saveInode(tx *content.Tx, ino uint64, n *schema.Inode) error {
	n.Version = tx.Version()
	return tx.Batch().Set(schema.InodeKey(ino), n.Encode())
}

// allocIno hands out a new inode number; numbers are never reused.
func allocIno(tx *content.Tx) (uint64, error) {
	v, err := tx.Batch().Get(schema.KeyNextIno)
	if err != nil {
		return 0, err
	}
	ino, err := schema.ParseU64(v)
	if err != nil {
		return 0, err
	}
	return ino, tx.Batch().Set(schema.KeyNextIno, schema.U64(ino+1))
}

// deleteInode removes an inode with its extents and xattrs.
func (v *FS) deleteInode(tx *content.Tx, ino uint64) error {
	b := tx.Batch()
	if err := v.forgetClone(tx, ino); err != nil {
		return err
	}
	tx.Release()
	if err := tx.DropAll(ino); err != nil {
		return err
	}
	if err := deleteXattrs(b, ino); err != nil {
		return err
	}
	if err := b.Delete(schema.OrphanKey(ino)); err != nil {
		return err
	}
	tx.AddInodes(-1)
	if err := tx.Journal(ino, schema.OpDelete); err != nil {
		return err
	}
	return b.Delete(schema.InodeKey(ino))
}

// deleteRange deletes every key in the range bounds(ino) gives.
func deleteRange(b meta.Batch, bounds func(uint64) ([]byte, []byte), ino uint64) error {
	lo, hi := bounds(ino)
	return meta.DeleteEach(b, lo, hi)
}

// toAttr converts a record to what stat shows.
func toAttr(ino uint64, n *schema.Inode) vfs.Attr {
	a := vfs.Attr{
		Ino: ino, Mode: n.Mode, Nlink: n.Nlink, Uid: n.Uid, Gid: n.Gid, Rdev: n.Rdev,
		Size: n.Size, Blocks: (n.Mapped + 511) / 512,
		Atime: time.Unix(0, n.Atime), Mtime: time.Unix(0, n.Mtime), Ctime: time.Unix(0, n.Ctime),
	}
	switch n.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		a.Size, a.Blocks = 4096, 8
	case syscall.S_IFLNK:
		a.Size = int64(len(n.Target))
	}
	return a
}

// attr returns the inode's attributes including writes still buffered.
func (v *FS) attr(ino uint64) (vfs.Attr, error) {
	n, err := v.loadPending(ino)
	if err != nil {
		return vfs.Attr{}, err
	}
	return toAttr(ino, &n), nil
}

func isDir(mode uint32) bool { return mode&syscall.S_IFMT == syscall.S_IFDIR }

// GetAttr implements vfs.FS.
func (v *FS) GetAttr(ino uint64) (vfs.Attr, error) {
	a, err := v.attr(ino)
	return a, v.errno("getattr", err)
}
