package fusefs

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/doppelfs/doppel/internal/metrics"
	"github.com/doppelfs/doppel/internal/vfs"
)

// Timeouts for the kernel's attribute and entry caches. Every change
// passes through this mount, so the kernel's cache stays right; the
// timeout bounds staleness for changes made through the control socket.
const cacheTimeout = time.Second

// FS adapts a vfs.FS to go-fuse's RawFileSystem.
type FS struct {
	fuse.RawFileSystem // ENOSYS for what doppel does not serve
	v                  vfs.FS
	ops                *metrics.Ops
	log                *slog.Logger
	debug              bool // log every request; fixed at start, so checked without a call

	privs privs // what killPriv knows

	dirsMu sync.Mutex
	dirs   map[uint64][]vfs.DirEntry
	nextDh uint64
}

// New returns the FUSE adapter of v. It counts every request in ops and,
// when log is enabled at debug level, logs it.
func New(v vfs.FS, ops *metrics.Ops, log *slog.Logger) *FS {
	return &FS{
		RawFileSystem: fuse.NewDefaultRawFileSystem(), v: v, dirs: map[uint64][]vfs.DirEntry{},
		ops: ops, log: log, debug: log.Enabled(context.Background(), slog.LevelDebug),
	}
}

func (f *FS) String() string { return "doppel" }

func status(err error) fuse.Status {
	if err == nil {
		return fuse.OK
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return fuse.Status(e)
	}
	return fuse.EIO
}

func caller(h *fuse.InHeader) vfs.Caller {
	return vfs.Caller{Uid: h.Uid, Gid: h.Gid, Pid: h.Pid}
}

func fillAttr(a vfs.Attr, out *fuse.Attr) {
	out.Ino = a.Ino
	out.Size = uint64(a.Size)
	out.Blocks = uint64(a.Blocks)
	out.Mode = a.Mode
	out.Nlink = a.Nlink
	out.Uid, out.Gid = a.Uid, a.Gid
	out.Rdev = a.Rdev
	out.Blksize = 4096
	out.SetTimes(&a.Atime, &a.Mtime, &a.Ctime)
}

func fillEntry(a vfs.Attr, out *fuse.EntryOut) {
	out.NodeId = a.Ino
	out.Generation = 1
	out.SetEntryTimeout(cacheTimeout)
	out.SetAttrTimeout(cacheTimeout)
	fillAttr(a, &out.Attr)
}

func entry(a vfs.Attr, err error, out *fuse.EntryOut) fuse.Status {
	if err != nil {
		return status(err)
	}
	fillEntry(a, out)
	return fuse.OK
}

func (f *FS) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) (st fuse.Status) {
	defer f.track(metrics.OpLookup, h.NodeId, time.Now(), &st)
	a, err := f.v.Lookup(h.NodeId, name)
	return entry(a, err, out)
}

func (f *FS) Forget(nodeid, nlookup uint64) {}

func (f *FS) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) (st fuse.Status) {
	defer f.track(metrics.OpGetattr, in.NodeId, time.Now(), &st)
	a, err := f.v.GetAttr(in.NodeId)
	if err != nil {
		return status(err)
	}
	fillAttr(a, &out.Attr)
	out.SetTimeout(cacheTimeout)
	return fuse.OK
}

func (f *FS) SetAttr(_ <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) (st fuse.Status) {
	defer f.track(metrics.OpSetattr, in.NodeId, time.Now(), &st)
	if kill, suidgid := setAttrKills(in); kill {
		if err := f.killPriv(caller(&in.InHeader), in.NodeId, suidgid); err != nil {
			return status(err)
		}
	}
	var s vfs.SetAttr
	if in.Valid&fuse.FATTR_MODE != 0 {
		s.SetMode, s.Mode = true, in.Mode
	}
	if in.Valid&fuse.FATTR_UID != 0 {
		s.SetUid, s.Uid = true, in.Uid
	}
	if in.Valid&fuse.FATTR_GID != 0 {
		s.SetGid, s.Gid = true, in.Gid
	}
	if in.Valid&fuse.FATTR_SIZE != 0 {
		s.SetSize, s.Size = true, int64(in.Size)
	}
	if in.Valid&(fuse.FATTR_ATIME|fuse.FATTR_ATIME_NOW) != 0 {
		s.SetAtime = true
		if in.Valid&fuse.FATTR_ATIME_NOW == 0 {
			s.Atime = time.Unix(int64(in.Atime), int64(in.Atimensec))
		}
	}
	if in.Valid&(fuse.FATTR_MTIME|fuse.FATTR_MTIME_NOW) != 0 {
		s.SetMtime = true
		if in.Valid&fuse.FATTR_MTIME_NOW == 0 {
			s.Mtime = time.Unix(int64(in.Mtime), int64(in.Mtimensec))
		}
	}
	a, err := f.v.SetAttr(caller(&in.InHeader), in.NodeId, s)
	if err != nil {
		return status(err)
	}
	fillAttr(a, &out.Attr)
	out.SetTimeout(cacheTimeout)
	return fuse.OK
}

func (f *FS) Mknod(_ <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) (st fuse.Status) {
	defer f.track(metrics.OpMknod, in.NodeId, time.Now(), &st)
	a, err := f.v.Mknod(caller(&in.InHeader), in.NodeId, name, in.Mode, in.Rdev)
	return entry(a, err, out)
}

func (f *FS) Mkdir(_ <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) (st fuse.Status) {
	defer f.track(metrics.OpMkdir, in.NodeId, time.Now(), &st)
	a, err := f.v.Mkdir(caller(&in.InHeader), in.NodeId, name, in.Mode)
	return entry(a, err, out)
}

func (f *FS) Unlink(_ <-chan struct{}, h *fuse.InHeader, name string) (st fuse.Status) {
	defer f.track(metrics.OpUnlink, h.NodeId, time.Now(), &st)
	return status(f.v.Unlink(h.NodeId, name))
}

func (f *FS) Rmdir(_ <-chan struct{}, h *fuse.InHeader, name string) (st fuse.Status) {
	defer f.track(metrics.OpRmdir, h.NodeId, time.Now(), &st)
	return status(f.v.Rmdir(h.NodeId, name))
}

func (f *FS) Rename(_ <-chan struct{}, in *fuse.RenameIn, oldName, newName string) (st fuse.Status) {
	defer f.track(metrics.OpRename, in.NodeId, time.Now(), &st)
	return status(f.v.Rename(in.NodeId, oldName, in.Newdir, newName, in.Flags))
}

func (f *FS) Link(_ <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) (st fuse.Status) {
	defer f.track(metrics.OpLink, in.NodeId, time.Now(), &st)
	a, err := f.v.Link(in.Oldnodeid, in.NodeId, name)
	return entry(a, err, out)
}

func (f *FS) Symlink(_ <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) (st fuse.Status) {
	defer f.track(metrics.OpSymlink, h.NodeId, time.Now(), &st)
	a, err := f.v.Symlink(caller(h), h.NodeId, name, target)
	return entry(a, err, out)
}

func (f *FS) Readlink(_ <-chan struct{}, h *fuse.InHeader) (_ []byte, st fuse.Status) {
	defer f.track(metrics.OpReadlink, h.NodeId, time.Now(), &st)
	t, err := f.v.Readlink(h.NodeId)
	return []byte(t), status(err)
}

// Access is checked by the kernel (default_permissions).
func (f *FS) Access(_ <-chan struct{}, in *fuse.AccessIn) (st fuse.Status) {
	defer f.track(metrics.OpAccess, in.NodeId, time.Now(), &st)
	return fuse.OK
}

func (f *FS) StatFs(_ <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) (st fuse.Status) {
	defer f.track(metrics.OpStatfs, h.NodeId, time.Now(), &st)
	s, err := f.v.StatFS()
	if err != nil {
		return status(err)
	}
	out.Bsize, out.Frsize = s.BlockSize, s.BlockSize
	out.Blocks, out.Bfree, out.Bavail = s.Blocks, s.BlocksFree, s.BlocksAvail
	out.Files, out.Ffree = s.Files, s.FilesFree
	out.NameLen = s.NameMax
	return fuse.OK
}
