package fusefs

import (
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/doppelfs/doppel/internal/metrics"
	"github.com/doppelfs/doppel/internal/vfs"
)

// OpenDir takes no snapshot yet: the listing is read at offset 0 so that
// rewinddir sees a fresh one.
func (f *FS) OpenDir(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) (st fuse.Status) {
	defer f.track(metrics.OpOpendir, in.NodeId, time.Now(), &st)
	a, err := f.v.GetAttr(in.NodeId)
	if err != nil {
		return status(err)
	}
	if a.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return fuse.ENOTDIR
	}
	f.dirsMu.Lock()
	f.nextDh++
	out.Fh = f.nextDh
	f.dirs[out.Fh] = nil
	f.dirsMu.Unlock()
	return fuse.OK
}

// listing returns the directory's entries with "." and ".." first; the
// offset of entry i is i+1.
func (f *FS) listing(in *fuse.ReadIn) ([]vfs.DirEntry, fuse.Status) {
	f.dirsMu.Lock()
	list, ok := f.dirs[in.Fh]
	f.dirsMu.Unlock()
	if !ok {
		return nil, fuse.EBADF
	}
	if in.Offset == 0 || list == nil {
		entries, err := f.v.ReadDir(in.NodeId)
		if err != nil {
			return nil, status(err)
		}
		list = append([]vfs.DirEntry{
			{Name: ".", Ino: in.NodeId, Mode: syscall.S_IFDIR},
			{Name: "..", Ino: 0, Mode: syscall.S_IFDIR},
		}, entries...)
		f.dirsMu.Lock()
		f.dirs[in.Fh] = list
		f.dirsMu.Unlock()
	}
	return list, fuse.OK
}

func (f *FS) ReadDir(_ <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) (st fuse.Status) {
	defer f.track(metrics.OpReaddir, in.NodeId, time.Now(), &st)
	list, st := f.listing(in)
	if !st.Ok() {
		return st
	}
	for i := int(in.Offset); i < len(list); i++ {
		e := list[i]
		if !out.AddDirEntry(fuse.DirEntry{Name: e.Name, Ino: max(e.Ino, 1), Mode: e.Mode, Off: uint64(i + 1)}) {
			break
		}
	}
	return fuse.OK
}

func (f *FS) ReadDirPlus(_ <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) (st fuse.Status) {
	defer f.track(metrics.OpReaddirplus, in.NodeId, time.Now(), &st)
	list, st := f.listing(in)
	if !st.Ok() {
		return st
	}
	for i := int(in.Offset); i < len(list); i++ {
		e := list[i]
		var a vfs.Attr
		var err error
		if e.Name != "." && e.Name != ".." {
			if a, err = f.v.GetAttr(e.Ino); err != nil {
				continue // removed since the listing was taken
			}
		}
		eo := out.AddDirLookupEntry(fuse.DirEntry{Name: e.Name, Ino: max(e.Ino, 1), Mode: e.Mode, Off: uint64(i + 1)})
		if eo == nil {
			break
		}
		if e.Name != "." && e.Name != ".." {
			fillEntry(a, eo) // "." and ".." keep node ID 0: the kernel skips them
		}
	}
	return fuse.OK
}

func (f *FS) ReleaseDir(in *fuse.ReleaseIn) {
	defer f.track(metrics.OpReleasedir, in.NodeId, time.Now(), nil)
	f.dirsMu.Lock()
	delete(f.dirs, in.Fh)
	f.dirsMu.Unlock()
}
