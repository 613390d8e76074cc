package fusefs

import (
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/doppelfs/doppel/internal/vfs"
)

func (f *FS) Create(_ <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	a, h, err := f.v.Create(caller(&in.InHeader), in.NodeId, name, in.Mode, in.Flags)
	if err != nil {
		return status(err)
	}
	fillEntry(a, &out.EntryOut)
	out.Fh = uint64(h)
	return fuse.OK
}

func (f *FS) Open(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	h, err := f.v.Open(in.NodeId, in.Flags)
	if err != nil {
		return status(err)
	}
	out.Fh = uint64(h)
	return fuse.OK
}

func (f *FS) Read(_ <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	n, err := f.v.Read(vfs.Handle(in.Fh), int64(in.Offset), buf[:in.Size])
	if err != nil {
		return nil, status(err)
	}
	return fuse.ReadResultData(buf[:n]), fuse.OK
}

func (f *FS) Write(_ <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	n, err := f.v.Write(vfs.Handle(in.Fh), int64(in.Offset), data)
	return uint32(n), status(err)
}

func (f *FS) Flush(_ <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	return status(f.v.Flush(vfs.Handle(in.Fh)))
}

func (f *FS) Fsync(_ <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	return status(f.v.Fsync(vfs.Handle(in.Fh), in.FsyncFlags&1 != 0))
}

func (f *FS) Release(_ <-chan struct{}, in *fuse.ReleaseIn) {
	f.v.Release(vfs.Handle(in.Fh))
}

func (f *FS) Fallocate(_ <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	return status(f.v.Fallocate(vfs.Handle(in.Fh), in.Mode, int64(in.Offset), int64(in.Length)))
}

func (f *FS) Lseek(_ <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
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

func (f *FS) CopyFileRange(_ <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	n, err := f.v.CopyFileRange(vfs.Handle(in.FhIn), int64(in.OffIn), vfs.Handle(in.FhOut), int64(in.OffOut), min(int64(in.Len), maxCopy))
	return uint32(n), status(err)
}

func (f *FS) FsyncDir(_ <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	return status(f.v.SyncFS())
}

func (f *FS) GetXAttr(_ <-chan struct{}, h *fuse.InHeader, name string, dest []byte) (uint32, fuse.Status) {
	val, err := f.v.GetXattr(h.NodeId, name)
	if err != nil {
		return 0, status(err)
	}
	if len(dest) < len(val) {
		return uint32(len(val)), fuse.ERANGE
	}
	return uint32(copy(dest, val)), fuse.OK
}

func (f *FS) ListXAttr(_ <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
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

func (f *FS) SetXAttr(_ <-chan struct{}, in *fuse.SetXAttrIn, name string, data []byte) fuse.Status {
	return status(f.v.SetXattr(in.NodeId, name, data, in.Flags))
}

func (f *FS) RemoveXAttr(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	return status(f.v.RemoveXattr(h.NodeId, name))
}
