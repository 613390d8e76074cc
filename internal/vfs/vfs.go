package vfs

import (
	"time"

	"github.com/doppelfs/doppel/internal/filelock"
)

// Attr is what stat reports about an inode.
type Attr struct {
	Ino    uint64
	Mode   uint32 // type and permission bits
	Nlink  uint32
	Uid    uint32
	Gid    uint32
	Rdev   uint32
	Size   int64
	Blocks int64 // 512-byte units actually mapped
	Atime  time.Time
	Mtime  time.Time
	Ctime  time.Time
}

// Caller identifies who asks for an operation.
type Caller struct {
	Uid, Gid uint32
	Pid      uint32
}

// SetAttr fields are applied when their Set flag is true.
type SetAttr struct {
	SetMode  bool
	Mode     uint32
	SetUid   bool
	Uid      uint32
	SetGid   bool
	Gid      uint32
	SetSize  bool
	Size     int64
	SetAtime bool
	Atime    time.Time // zero with SetAtime means now
	SetMtime bool
	Mtime    time.Time // zero with SetMtime means now
}

// DirEntry is one name in a directory listing.
type DirEntry struct {
	Name string
	Ino  uint64
	Mode uint32 // type bits only
}

// Handle names an open file.
type Handle uint64

// StatFS describes the volume's space.
type StatFS struct {
	BlockSize   uint32
	Blocks      uint64
	BlocksFree  uint64
	BlocksAvail uint64
	Files       uint64
	FilesFree   uint64
	NameMax     uint32
}

// Rename flags, as renameat2 takes them.
const (
	RenameNoReplace = 1
	RenameExchange  = 2
)

// Fallocate modes, as fallocate takes them.
const (
	FallocKeepSize      = 0x01
	FallocPunchHole     = 0x02
	FallocCollapseRange = 0x08
	FallocZeroRange     = 0x10
	FallocInsertRange   = 0x20
	FallocUnshareRange  = 0x40
)

// Xattr flags, as setxattr takes them.
const (
	XattrCreate  = 1
	XattrReplace = 2
)

// ChunkingXattr holds a file's chunking policy (e.g. "fixed:4K"), which
// overrides the volume's for the file's future writes; on a directory it
// is inherited by what is created below it.
const ChunkingXattr = "user.doppel.chunking"

// RootIno is the inode number of a volume's root directory.
const RootIno = 1

// FS is the operation set of a mounted volume.
type FS interface {
	Lookup(parent uint64, name string) (Attr, error)
	GetAttr(ino uint64) (Attr, error)
	SetAttr(c Caller, ino uint64, in SetAttr) (Attr, error)

	Mknod(c Caller, parent uint64, name string, mode, rdev uint32) (Attr, error)
	Mkdir(c Caller, parent uint64, name string, mode uint32) (Attr, error)
	Symlink(c Caller, parent uint64, name, target string) (Attr, error)
	Readlink(ino uint64) (string, error)
	Link(ino, parent uint64, name string) (Attr, error)
	Unlink(parent uint64, name string) error
	Rmdir(parent uint64, name string) error
	Rename(oldParent uint64, oldName string, newParent uint64, newName string, flags uint32) error
	ReadDir(ino uint64) ([]DirEntry, error)

	Create(c Caller, parent uint64, name string, mode uint32, flags uint32) (Attr, Handle, error)
	Open(ino uint64, flags uint32) (Handle, error)
	Read(h Handle, off int64, buf []byte) (int, error)
	Write(h Handle, off int64, data []byte) (int, error)
	// Flush is called at every close of a file descriptor.
	Flush(h Handle) error
	Fsync(h Handle, dataOnly bool) error
	Release(h Handle) error
	Fallocate(h Handle, mode uint32, off, length int64) error
	// Lseek serves SEEK_DATA and SEEK_HOLE.
	Lseek(h Handle, off int64, whence int) (int64, error)
	// CopyFileRange shares data instead of copying it.
	CopyFileRange(in Handle, inOff int64, out Handle, outOff int64, length int64) (int64, error)

	GetXattr(ino uint64, name string) ([]byte, error)
	ListXattr(ino uint64) ([]string, error)
	SetXattr(ino uint64, name string, value []byte, flags uint32) error
	RemoveXattr(ino uint64, name string) error

	StatFS() (StatFS, error)
	// SyncFS makes everything written so far durable.
	SyncFS() error
}

// NewFile is a complete regular file, for FileCreator.
type NewFile struct {
	Mode         uint32 // permission bits
	Uid, Gid     uint32
	Atime, Mtime time.Time
	Size         int64
	// Xattrs are the file's extended attributes, exactly: nothing is
	// inherited from the directory. A chunking policy among them applies
	// to the data. Those the volume refuses are skipped and passed to
	// XattrRefused, if set.
	Xattrs       []Xattr
	XattrRefused func(name string, err error)
	// ReadNext fills p with the file's next data and returns its offset,
	// in increasing order; gaps between the pieces, and after the last one
	// up to Size, are holes. It returns io.EOF after the last piece. Its
	// other errors abort the creation and are returned as they are.
	ReadNext func(p []byte) (off int64, n int, err error)
}

// Xattr is an extended attribute.
type Xattr struct {
	Name  string
	Value []byte
}

// FileCreator is an optional fast path for bulk ingest (doppel import):
// it creates a whole file, content and attributes, reading the data
// itself, instead of create, write, flush and setattr calls. The entry
// must not exist. On error nothing is left in the volume.
type FileCreator interface {
	CreateFile(parent uint64, name string, f NewFile) (Attr, error)
}

// Locker is an optional capability: fcntl and flock locks kept by the
// volume, for a volume that several hosts mount at once (where the
// kernel's own locks would bind one host only). An owner is the kernel's
// lock owner on this host; flock locks and fcntl locks are separate.
type Locker interface {
	// SharesLocks reports whether the volume keeps locks (else the
	// frontend leaves them to the kernel).
	SharesLocks() bool
	// GetLk returns the first lock of another owner that stands in the
	// way of lk, or lk with type F_UNLCK when none does.
	GetLk(ino, owner uint64, flock bool, lk filelock.Lock) (filelock.Lock, error)
	// SetLk takes or releases lk for owner: EAGAIN when another owner's
	// lock is in the way, unless wait, which waits until none is (EINTR
	// when cancel closes first).
	SetLk(cancel <-chan struct{}, ino, owner uint64, flock bool, lk filelock.Lock, wait bool) error
	// ReleaseLocks drops all of owner's locks of that kind on ino (a
	// close for fcntl locks, the last close of a file for flock locks).
	ReleaseLocks(ino, owner uint64, flock bool) error
}

// HostCacheKeeper is an optional capability: a frontend with no kernel
// page cache above it (a block export) asks the volume to leave the
// host's page cache of a file's stored bytes alone, so that what it read
// once is read again from memory. Reads through a FUSE mount drop what a
// streaming reader read instead, since the kernel keeps those pages as
// the file's own.
type HostCacheKeeper interface {
	// KeepHostCache keeps ino's stored bytes cached until release is
	// called.
	KeepHostCache(ino uint64) (release func())
}

// ExtentMapper is an optional capability for a frontend that reads a file
// at random for a long time (a block export): MapExtents keeps ino's
// extent map in memory, in step with every write, until release is
// called, so that a read looks nothing up in the metadata store.
type ExtentMapper interface {
	MapExtents(ino uint64) (release func())
}

// RangeSeeker is an optional capability for a frontend that asks where
// data and holes lie within a range (a block export's BLOCK_STATUS):
// LseekWithin is Lseek, except that a hole past limit may be reported at
// limit. Finding a file's next hole may otherwise read its whole extent
// map up to the file's end.
type RangeSeeker interface {
	LseekWithin(h Handle, off int64, whence int, limit int64) (int64, error)
}

// BlockReader is an optional capability for a frontend that serves a file
// at a fixed size (a block export): ReadBlock fills all of buf with the
// file's bytes at off, zeros past the file's end. It can skip what Read
// pays to learn the size: a file holds no data past its end.
type BlockReader interface {
	ReadBlock(h Handle, off int64, buf []byte) error
}

// FromWriter is an optional capability for a frontend whose writes arrive
// on a stream (a block export's connection): WriteFrom writes n bytes at
// off as Write does, but fill reads them straight into the file system's
// own buffer, saving the copy Write makes. fill is called at most once,
// with n bytes; when it fails nothing is written and its error is
// returned as it is. When WriteFrom fails before calling fill, the bytes
// are still the caller's to consume.
type FromWriter interface {
	WriteFrom(h Handle, off int64, n int, fill func(dst []byte) error) (int, error)
}

// Reader is the Read method of FS.
type Reader interface {
	Read(h Handle, off int64, buf []byte) (int, error)
}

// ReadBlockVia is ReadBlock for a file system without the capability: it
// reads through Read, which stops at the file's end, and zero-fills the
// rest of buf.
func ReadBlockVia(r Reader, h Handle, off int64, buf []byte) error {
	for n := 0; n < len(buf); {
		m, err := r.Read(h, off+int64(n), buf[n:])
		if err != nil {
			return err
		}
		if m == 0 {
			clear(buf[n:])
			break
		}
		n += m
	}
	return nil
}
