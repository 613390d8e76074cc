package blockfile

import (
	"errors"
	"syscall"

	"github.com/doppelfs/doppel/internal/frontend/nbd"
	"github.com/doppelfs/doppel/internal/vfs"
)

// Changed is told of every range a block command changed, so that a FUSE
// mount of the same volume can drop the kernel's cached pages of it.
type Changed func(ino uint64, off, length int64)

// File is one volume file served as a block device. Each connection to
// the export gets the file's size as it is when the connection starts, so
// a file grown or shortened meanwhile (truncate through the mount) is
// seen at its new size by the clients that connect after.
type File struct {
	fs       vfs.FS
	h        vfs.Handle
	ino      uint64
	size     int64
	readOnly bool
	changed  Changed
	release  func() // of the host page cache kept for the export (vfs.HostCacheKeeper)
	unmap    func() // of the extent map kept for the export (vfs.ExtentMapper)
}

var (
	_ nbd.Backend      = (*File)(nil)
	_ nbd.FastZeroer   = (*File)(nil)
	_ nbd.StreamWriter = (*File)(nil)
)

// Open opens the regular file ino of fs for an export. changed may be nil.
func Open(fs vfs.FS, ino uint64, readOnly bool, changed Changed) (*File, error) {
	a, err := fs.GetAttr(ino)
	if err != nil {
		return nil, err
	}
	if a.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, errors.New("not a regular file")
	}
	flags := uint32(syscall.O_RDWR)
	if readOnly {
		flags = syscall.O_RDONLY
	}
	h, err := fs.Open(ino, flags)
	if err != nil {
		return nil, err
	}
	f := &File{fs: fs, h: h, ino: ino, size: a.Size, readOnly: readOnly, changed: changed, release: func() {}, unmap: func() {}}
	if k, ok := fs.(vfs.HostCacheKeeper); ok {
		// No kernel page cache above an export: reads keep the host's.
		f.release = k.KeepHostCache(ino)
	}
	if m, ok := fs.(vfs.ExtentMapper); ok {
		// Random reads all over the file: its extents from memory.
		f.unmap = m.MapExtents(ino)
	}
	return f, nil
}

// Ino is the inode of the file.
func (f *File) Ino() uint64 { return f.ino }

// Size implements nbd.Sizer: the file's size now (the size it had at
// open if it cannot be read).
func (f *File) Size() int64 {
	if a, err := f.fs.GetAttr(f.ino); err == nil {
		return a.Size
	}
	return f.size
}

// Close makes what was written durable and closes the file.
func (f *File) Close() error {
	var err error
	if !f.readOnly {
		err = f.fs.Fsync(f.h, false)
	}
	f.release()
	f.unmap()
	return errors.Join(err, f.fs.Release(f.h))
}

func (f *File) notify(off, length int64) {
	if f.changed != nil {
		f.changed(f.ino, off, length)
	}
}
