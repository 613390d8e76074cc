package namespace

import (
	"syscall"

	"github.com/doppelfs/doppel/internal/vfs"
)

// KeepHostCache implements vfs.HostCacheKeeper.
func (v *FS) KeepHostCache(ino uint64) (release func()) { return v.eng.KeepHostCache(ino) }

// MapExtents implements vfs.ExtentMapper.
func (v *FS) MapExtents(ino uint64) (release func()) { return v.eng.MapExtents(ino) }

// ReadBlock implements vfs.BlockReader. With no buffered writes
// it reads the extents without loading the inode for its size (a Pebble
// lookup per request of a block export's random reads): a file has no
// extents past its committed end (fsck's extent-past-eof), so what lies
// there reads as the hole it is. A clone's stub, whose extents are its
// origin's as of its clone, goes through Read; so does a file with
// buffered writes, where Read takes the size from the buffer for free.
func (v *FS) ReadBlock(h vfs.Handle, off int64, buf []byte) error {
	hd, err := v.handle(h)
	if err != nil {
		return err
	}
	if off < 0 {
		return syscall.EINVAL
	}
	l := v.locks.of(hd.ino)
	l.RLock()
	if hd.f.pending || hd.f.stub.Load() {
		l.RUnlock()
		return vfs.ReadBlockVia(v, h, off, buf)
	}
	defer l.RUnlock()
	if err := v.readStored(hd.f, off, buf); err != nil {
		return v.readFailed(hd.ino, off, len(buf), err)
	}
	hd.f.buf.Overlay(off, buf)
	return nil
}
