package schema

// Inode is the record of a file, directory, symlink or special file.
type Inode struct {
	Mode  uint32 // file type and permission bits, as in st_mode
	Uid   uint32
	Gid   uint32
	Nlink uint32
	Size  int64
	// Mapped is the number of bytes covered by extents (not holes); it
	// gives st_blocks without walking the extent map.
	Mapped  int64
	Rdev    uint32
	Atime   int64 // nanoseconds since the epoch
	Mtime   int64
	Ctime   int64
	Btime   int64
	Version uint64 // volume version of the last change
	Target  string // symlink target

	// Clone is the clone whose tree the inode was made in (0: none); a
	// read-only clone's inodes refuse changes.
	Clone uint64
	// Origin is the inode this one was cloned from (zero if none).
	Origin Origin
	// Stub says the inode's entries, extents and xattrs are still
	// Origin's: it is materialized before any of them changes.
	Stub bool
	// Excl are the exclusions that apply below a stub directory.
	Excl []ExclCtx
}

// Origin names an inode as it stood at a pinned version.
type Origin struct{ Pin, Base uint64 }

// ExclCtx is one clone's exclusions as seen from a directory: Path is the
// directory's path relative to the clone's root ("" for the root).
type ExclCtx struct {
	Clone uint64
	Path  string
}

// Cloned reports whether the inode carries clone fields.
func (n *Inode) Cloned() bool {
	return n.Clone != 0 || n.Origin != (Origin{}) || n.Stub || len(n.Excl) > 0
}

const (
	inodeFormat       = 1
	inodeFormatCloned = 2 // format 1 followed by the clone fields
)

// Encode returns the record bytes.
func (n *Inode) Encode() []byte {
	e := enc{b: make([]byte, 0, 64+len(n.Target))}
	cloned := n.Cloned()
	if cloned {
		e.raw([]byte{inodeFormatCloned})
	} else {
		e.raw([]byte{inodeFormat})
	}
	e.u(uint64(n.Mode))
	e.u(uint64(n.Uid))
	e.u(uint64(n.Gid))
	e.u(uint64(n.Nlink))
	e.i(n.Size)
	e.i(n.Mapped)
	e.u(uint64(n.Rdev))
	e.i(n.Atime)
	e.i(n.Mtime)
	e.i(n.Ctime)
	e.i(n.Btime)
	e.u(n.Version)
	e.bytes([]byte(n.Target))
	if cloned {
		e.u(n.Clone)
		e.u(n.Origin.Pin)
		e.u(n.Origin.Base)
		e.u(boolU(n.Stub))
		e.u(uint64(len(n.Excl)))
		for _, x := range n.Excl {
			e.u(x.Clone)
			e.bytes([]byte(x.Path))
		}
	}
	return e.b
}

// DecodeInode parses an inode record.
func DecodeInode(b []byte) (Inode, error) {
	d := dec{b: b}
	cloned := len(b) > 0 && b[0] == inodeFormatCloned
	if cloned {
		d.format(inodeFormatCloned)
	} else {
		d.format(inodeFormat)
	}
	n := Inode{
		Mode: d.u32(), Uid: d.u32(), Gid: d.u32(), Nlink: d.u32(),
		Size: d.i(), Mapped: d.i(), Rdev: d.u32(),
		Atime: d.i(), Mtime: d.i(), Ctime: d.i(), Btime: d.i(),
		Version: d.u(),
	}
	n.Target = string(d.bytes())
	if cloned {
		n.Clone = d.u()
		n.Origin = Origin{Pin: d.u(), Base: d.u()}
		n.Stub = d.bool()
		c := d.u()
		if c > uint64(len(d.b)) {
			return Inode{}, ErrBadRecord
		}
		for i := uint64(0); i < c; i++ {
			n.Excl = append(n.Excl, ExclCtx{Clone: d.u(), Path: string(d.bytes())})
		}
		if !n.Cloned() {
			return Inode{}, ErrBadRecord // must have used format 1
		}
	}
	if n.Size < 0 || n.Mapped < 0 {
		return Inode{}, ErrBadRecord
	}
	return n, d.end()
}

// Dirent is a directory entry's value.
type Dirent struct {
	Ino  uint64
	Type uint32 // file type bits of the child's mode (S_IFMT)
}

const direntFormat = 1

// Encode returns the record bytes.
func (d *Dirent) Encode() []byte {
	e := enc{b: make([]byte, 0, 16)}
	e.raw([]byte{direntFormat})
	e.u(d.Ino)
	e.u(uint64(d.Type))
	return e.b
}

// DecodeDirent parses a directory entry.
func DecodeDirent(b []byte) (Dirent, error) {
	d := dec{b: b}
	d.format(direntFormat)
	r := Dirent{Ino: d.u(), Type: d.u32()}
	return r, d.end()
}
