package namespace

import (
	"math"
	"syscall"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

const (
	seekData = 3
	seekHole = 4
)

// Lseek implements vfs.FS for SEEK_DATA and SEEK_HOLE.
func (v *FS) Lseek(h vfs.Handle, off int64, whence int) (int64, error) {
	return v.lseek(h, off, whence, math.MaxInt64)
}

// LseekWithin implements vfs.RangeSeeker.
func (v *FS) LseekWithin(h vfs.Handle, off int64, whence int, limit int64) (int64, error) {
	return v.lseek(h, off, whence, limit)
}

// lseek is Lseek, but a hole past limit may be reported at limit.
func (v *FS) lseek(h vfs.Handle, off int64, whence int, limit int64) (int64, error) {
	hd, err := v.handle(h)
	if err != nil {
		return 0, err
	}
	l := v.locks.of(hd.ino)
	l.Lock()
	defer l.Unlock()
	if err := v.flushOpenLocked(hd.ino); err != nil {
		return 0, v.errno("lseek", err)
	}
	defer v.pinReads.begin()() // it may be a stub
	n, err := loadInode(v.meta, hd.ino)
	if err != nil {
		return 0, v.errno("lseek", err)
	}
	if off < 0 {
		return 0, syscall.EINVAL
	}
	if off >= n.Size {
		return 0, syscall.ENXIO
	}
	r, ino, err := v.dataSource(hd.ino, &n)
	if err != nil {
		return 0, v.errno("lseek", err)
	}
	switch whence {
	case seekData:
		pos, err := v.eng.SeekData(r, ino, off)
		if err != nil {
			return 0, v.errno("lseek", err)
		}
		if pos < 0 || pos >= n.Size {
			return 0, syscall.ENXIO
		}
		return pos, nil
	case seekHole:
		pos, err := v.eng.SeekHoleBefore(r, ino, off, limit)
		if err != nil {
			return 0, v.errno("lseek", err)
		}
		return min(pos, n.Size), nil
	}
	return 0, syscall.EINVAL
}

// CopyFileRange implements vfs.FS by sharing chunks: the destination gets
// references to the source's chunks, and no data is read or written.
func (v *FS) CopyFileRange(in vfs.Handle, inOff int64, out vfs.Handle, outOff int64, length int64) (int64, error) {
	src, err := v.handle(in)
	if err != nil {
		return 0, err
	}
	dst, err := v.handle(out)
	if err != nil {
		return 0, err
	}
	if inOff < 0 || outOff < 0 || length < 0 || outOff+length > maxFileSize {
		return 0, syscall.EINVAL
	}
	if err := v.opt.Headroom.ForMeta(); err != nil {
		return 0, v.errno("copy_file_range", err)
	}
	// Shared extents are copied from the source's own records.
	if n, err := loadInode(v.meta, src.ino); err == nil && n.Stub {
		if err := v.materialize(src.ino); err != nil {
			return 0, v.errno("copy_file_range", err)
		}
	}
	unlock := v.locks.lockTwo(src.ino, dst.ino)
	defer unlock()
	for _, ino := range []uint64{src.ino, dst.ino} {
		if err := v.flushOpenLocked(ino); err != nil {
			return 0, v.errno("copy_file_range", err)
		}
	}
	tx, err := v.begin()
	if err != nil {
		return 0, v.errno("copy_file_range", err)
	}
	copied, err := copyRange(tx, src.ino, inOff, dst.ino, outOff, length)
	if err != nil {
		tx.Abort()
		return 0, v.errno("copy_file_range", err)
	}
	if copied == 0 {
		tx.Abort()
		return 0, nil
	}
	return copied, v.errno("copy_file_range", tx.Commit(false))
}

func copyRange(tx *content.Tx, srcIno uint64, inOff int64, dstIno uint64, outOff, length int64) (int64, error) {
	b := tx.Batch()
	sn, err := loadInode(b, srcIno)
	if err != nil {
		return 0, err
	}
	if isDir(sn.Mode) {
		return 0, syscall.EISDIR
	}
	if sn.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return 0, syscall.EINVAL
	}
	if inOff >= sn.Size || length == 0 {
		return 0, nil
	}
	n := min(length, sn.Size-inOff)
	if srcIno == dstIno && inOff < outOff+n && outOff < inOff+n {
		return 0, syscall.EINVAL
	}
	mapped, err := tx.Copy(srcIno, inOff, dstIno, outOff, n)
	if err != nil {
		return 0, err
	}
	dn, err := loadInode(b, dstIno)
	if err != nil {
		return 0, err
	}
	dn.Mapped += mapped
	dn.Size = max(dn.Size, outOff+n)
	t := now()
	dn.Mtime, dn.Ctime = t, t
	if err := tx.Journal(dstIno, schema.OpData); err != nil {
		return 0, err
	}
	return n, saveInode(tx, dstIno, &dn)
}
