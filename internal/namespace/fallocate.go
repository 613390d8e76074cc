package namespace

import (
	"syscall"

	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// shiftAlign is the alignment collapse and insert require of offset and
// length: the block size stat and statfs report, as ext4 requires its own.
const shiftAlign = 4096

// fallocModes are the mode bits Fallocate knows.
const fallocModes = vfs.FallocKeepSize | vfs.FallocPunchHole | vfs.FallocCollapseRange |
	vfs.FallocZeroRange | vfs.FallocInsertRange | vfs.FallocUnshareRange

// checkFallocMode refuses the combinations fallocate(2) refuses, in the
// order its man page and the kernel's vfs_fallocate (before 6.13) check.
func checkFallocMode(mode uint32) error {
	switch {
	case mode&^fallocModes != 0:
		return syscall.EOPNOTSUPP
	case mode&vfs.FallocPunchHole != 0 && mode&vfs.FallocZeroRange != 0:
		return syscall.EOPNOTSUPP
	case mode&vfs.FallocPunchHole != 0 && mode&vfs.FallocKeepSize == 0:
		return syscall.EOPNOTSUPP
	case mode&vfs.FallocCollapseRange != 0 && mode != vfs.FallocCollapseRange,
		mode&vfs.FallocInsertRange != 0 && mode != vfs.FallocInsertRange,
		mode&vfs.FallocUnshareRange != 0 && mode&^(vfs.FallocUnshareRange|vfs.FallocKeepSize) != 0:
		return syscall.EINVAL
	}
	return nil
}

// checkShift applies ext4's rules for collapsing or inserting [off,
// off+length) in a file of size bytes.
func checkShift(mode uint32, off, length, size int64) error {
	if off%shiftAlign != 0 || length%shiftAlign != 0 {
		return syscall.EINVAL
	}
	if mode == vfs.FallocCollapseRange {
		if off+length >= size {
			return syscall.EINVAL // that would be a truncate
		}
		return nil
	}
	if length > maxFileSize-size {
		return syscall.EFBIG
	}
	if off >= size {
		return syscall.EINVAL // that would be an append
	}
	return nil
}

// Fallocate implements vfs.FS. Preallocation only extends the size (holes
// cost nothing), and so does unsharing: chunks are immutable, never
// shared in place. Punching and zeroing drop extents so space returns.
// Collapsing and inserting shift the extent map: no data moves.
//
// The kernel's FUSE client (through 6.18 at least) refuses collapse,
// insert and unshare itself, so a mount never sends them here.
func (v *FS) Fallocate(h vfs.Handle, mode uint32, off, length int64) error {
	hd, err := v.handle(h)
	if err != nil {
		return err
	}
	if off < 0 || length <= 0 {
		return syscall.EINVAL
	}
	if err := checkFallocMode(mode); err != nil {
		return err
	}
	if off+length > maxFileSize {
		return syscall.EINVAL
	}
	if mode&(vfs.FallocPunchHole|vfs.FallocCollapseRange) == 0 {
		if err := v.opt.Headroom.ForMeta(); err != nil {
			return v.errno("fallocate", err)
		}
	}
	keep := mode&vfs.FallocKeepSize != 0
	l := v.locks.of(hd.ino)
	l.Lock()
	defer l.Unlock()
	if err := v.flushOpenLocked(hd.ino); err != nil {
		return v.errno("fallocate", err)
	}
	tx, err := v.begin()
	if err != nil {
		return v.errno("fallocate", err)
	}
	n, err := loadInode(tx.Batch(), hd.ino)
	if err != nil {
		tx.Abort()
		return v.errno("fallocate", err)
	}
	fail := func(err error) error {
		tx.Abort()
		return v.errno("fallocate", err)
	}
	switch {
	case isDir(n.Mode):
		return fail(syscall.EISDIR)
	case n.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return fail(syscall.ENODEV)
	}
	switch mode &^ vfs.FallocKeepSize {
	case 0, vfs.FallocUnshareRange:
		if keep {
			tx.Abort()
			return nil
		}
	case vfs.FallocPunchHole, vfs.FallocZeroRange:
		tx.Release() // TRIM, discard: the space is wanted back now
		mapped, err := tx.Punch(hd.ino, off, off+length)
		if err != nil {
			return fail(err)
		}
		n.Mapped += mapped
		n.Mtime = now()
	case vfs.FallocCollapseRange, vfs.FallocInsertRange:
		if err := checkShift(mode, off, length, n.Size); err != nil {
			return fail(err)
		}
		if mode == vfs.FallocInsertRange {
			err = tx.Shift(hd.ino, off, length)
			n.Size += length
		} else {
			var mapped int64
			tx.Release()
			if mapped, err = tx.Punch(hd.ino, off, off+length); err == nil {
				err = tx.Shift(hd.ino, off+length, -length)
			}
			n.Mapped += mapped
			n.Size -= length
		}
		if err != nil {
			return fail(err)
		}
		n.Mtime = now()
		keep = true // the size changed already
	}
	if !keep && off+length > n.Size {
		n.Size = off + length
	}
	n.Ctime = now()
	if err := tx.Journal(hd.ino, schema.OpData); err != nil {
		return fail(err)
	}
	if err := saveInode(tx, hd.ino, &n); err != nil {
		return fail(err)
	}
	return v.errno("fallocate", tx.Commit(false))
}
