package fusefs

import (
	"errors"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/doppelfs/doppel/internal/metrics"
	"github.com/doppelfs/doppel/internal/vfs"
)

func (f *FS) Create(_ <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) (st fuse.Status) {
	defer f.track(metrics.OpCreate, in.NodeId, time.Now(), &st)
	a, h, err := f.v.Create(caller(&in.InHeader), in.NodeId, name, in.Mode, in.Flags)
	if err != nil {
		return status(err)
	}
	f.privs.set(a.Ino, true) // a new file has no capabilities
	fillEntry(a, &out.EntryOut)
	out.Fh = uint64(h)
	out.OpenFlags |= writeOnlyFlags(in.Flags)
	return fuse.OK
}

func (f *FS) Open(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) (st fuse.Status) {
	defer f.track(metrics.OpOpen, in.NodeId, time.Now(), &st)
	h, err := f.v.Open(in.NodeId, in.Flags)
	if err != nil {
		return status(err)
	}
	out.Fh = uint64(h)
	// The kernel's cached pages of the file stay valid across opens: every
	// change of content either goes through the kernel (writes, truncates,
	// fallocate and copy_file_range, which invalidate or update what they
	// touch) or makes a new inode (clones, imports, replacing renames), and
	// with AUTO_INVAL_DATA the kernel drops the pages anyway when it sees
	// the size or mtime change. Rereads then cost no request and no
	// verification: the pages were verified when they were read.
	out.OpenFlags |= fuse.FOPEN_KEEP_CACHE | writeOnlyFlags(in.Flags)
	return fuse.OK
}

// writeOnlyFlags makes the writes of a handle open for writing only
// bypass the kernel's page cache (FOPEN_DIRECT_IO): a handle that cannot
// read gains nothing from the pages, while copying every byte into them
// before it reaches the daemon cost the writer about as much CPU as the
// daemon spends cutting and hashing it, and left the cache full of pages
// that a later change of mtime drops anyway (docs/BENCHMARKS.md,
// "Write-only handles around the page cache"). The kernel invalidates
// the pages other handles cached (or map) of each range written so.
func writeOnlyFlags(openFlags uint32) uint32 {
	if openFlags&syscall.O_ACCMODE == syscall.O_WRONLY {
		return fuse.FOPEN_DIRECT_IO
	}
	return 0
}

func (f *FS) Read(_ <-chan struct{}, in *fuse.ReadIn, buf []byte) (_ fuse.ReadResult, st fuse.Status) {
	defer f.track(metrics.OpRead, in.NodeId, time.Now(), &st)
	n, err := f.v.Read(vfs.Handle(in.Fh), int64(in.Offset), buf[:in.Size])
	if err != nil {
		return nil, status(err)
	}
	return fuse.ReadResultData(buf[:n]), fuse.OK
}

func (f *FS) Write(_ <-chan struct{}, in *fuse.WriteIn, data []byte) (_ uint32, st fuse.Status) {
	defer f.track(metrics.OpWrite, in.NodeId, time.Now(), &st)
	if err := f.killPriv(caller(&in.InHeader), in.NodeId, in.WriteFlags&fuse.WRITE_KILL_SUIDGID != 0); err != nil {
		return 0, status(err)
	}
	n, err := f.v.Write(vfs.Handle(in.Fh), int64(in.Offset), data)
	return uint32(n), status(err)
}

func (f *FS) Flush(_ <-chan struct{}, in *fuse.FlushIn) (st fuse.Status) {
	defer f.track(metrics.OpFlush, in.NodeId, time.Now(), &st)
	err := f.v.Flush(vfs.Handle(in.Fh))
	f.releaseLocks(in.NodeId, in.LockOwner, false)
	return status(err)
}

func (f *FS) Fsync(_ <-chan struct{}, in *fuse.FsyncIn) (st fuse.Status) {
	defer f.track(metrics.OpFsync, in.NodeId, time.Now(), &st)
	return status(f.v.Fsync(vfs.Handle(in.Fh), in.FsyncFlags&1 != 0))
}

// Release has no reply, but a failure (the last close could not commit
// the file's buffered writes) is still counted and logged.
func (f *FS) Release(_ <-chan struct{}, in *fuse.ReleaseIn) {
	st := fuse.OK
	defer f.track(metrics.OpRelease, in.NodeId, time.Now(), &st)
	if in.ReleaseFlags&fuse.FUSE_RELEASE_FLOCK_UNLOCK != 0 {
		f.releaseLocks(in.NodeId, in.LockOwner, true)
	}
	st = status(f.v.Release(vfs.Handle(in.Fh)))
}

func (f *FS) Fallocate(_ <-chan struct{}, in *fuse.FallocateIn) (st fuse.Status) {
	defer f.track(metrics.OpFallocate, in.NodeId, time.Now(), &st)
	return status(f.v.Fallocate(vfs.Handle(in.Fh), in.Mode, int64(in.Offset), int64(in.Length)))
}

func (f *FS) Lseek(_ <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) (st fuse.Status) {
	defer f.track(metrics.OpLseek, in.NodeId, time.Now(), &st)
	off, err := f.v.Lseek(vfs.Handle(in.Fh), int64(in.Offset), int(in.Whence))
	if err != nil {
		return status(err)
	}
	out.Offset = uint64(off)
	return fuse.OK
}

// maxCopy keeps one copy_file_range reply within its 32-bit length; the
// kernel calls again for the rest.
const maxCopy = 1 << 30

func (f *FS) CopyFileRange(_ <-chan struct{}, in *fuse.CopyFileRangeIn) (_ uint32, st fuse.Status) {
	defer f.track(metrics.OpCopyFileRange, in.NodeId, time.Now(), &st)
	n, err := f.v.CopyFileRange(vfs.Handle(in.FhIn), int64(in.OffIn), vfs.Handle(in.FhOut), int64(in.OffOut), min(int64(in.Len), maxCopy))
	return uint32(n), status(err)
}

func (f *FS) FsyncDir(_ <-chan struct{}, in *fuse.FsyncIn) (st fuse.Status) {
	defer f.track(metrics.OpFsyncdir, in.NodeId, time.Now(), &st)
	return status(f.v.SyncFS())
}

func (f *FS) GetXAttr(_ <-chan struct{}, h *fuse.InHeader, name string, dest []byte) (_ uint32, st fuse.Status) {
	defer f.track(metrics.OpGetxattr, h.NodeId, time.Now(), &st)
	if name == capsXattr && f.privs.known(h.NodeId) {
		// The kernel asks before a new file's first write and before
		// every chown; a file known to have none needs no lookup.
		return 0, fuse.ENODATA
	}
	val, err := f.v.GetXattr(h.NodeId, name)
	if name == capsXattr && errors.Is(err, syscall.ENODATA) {
		f.privs.set(h.NodeId, true) // the kernel's probe before a write: killPriv need not ask again
	}
	if err != nil {
		return 0, status(err)
	}
	if len(dest) < len(val) {
		return uint32(len(val)), fuse.ERANGE
	}
	return uint32(copy(dest, val)), fuse.OK
}

func (f *FS) ListXAttr(_ <-chan struct{}, h *fuse.InHeader, dest []byte) (_ uint32, st fuse.Status) {
	defer f.track(metrics.OpListxattr, h.NodeId, time.Now(), &st)
	names, err := f.v.ListXattr(h.NodeId)
	if err != nil {
		return 0, status(err)
	}
	var list []byte
	for _, n := range names {
		list = append(append(list, n...), 0)
	}
	if len(dest) < len(list) {
		return uint32(len(list)), fuse.ERANGE
	}
	return uint32(copy(dest, list)), fuse.OK
}

func (f *FS) SetXAttr(_ <-chan struct{}, in *fuse.SetXAttrIn, name string, data []byte) (st fuse.Status) {
	defer f.track(metrics.OpSetxattr, in.NodeId, time.Now(), &st)
	if name == capsXattr {
		f.privs.set(in.NodeId, false)
	}
	return status(f.v.SetXattr(in.NodeId, name, data, in.Flags))
}

func (f *FS) RemoveXAttr(_ <-chan struct{}, h *fuse.InHeader, name string) (st fuse.Status) {
	defer f.track(metrics.OpRemovexattr, h.NodeId, time.Now(), &st)
	return status(f.v.RemoveXattr(h.NodeId, name))
}
