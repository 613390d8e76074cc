package tests

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Model operations on long-lived handles and on fds: xattrs,
// copy_file_range, SEEK_DATA/SEEK_HOLE and the handle life cycle. Handles
// stay open across renames and unlinks of their files, so orphaned files
// keep being read and written.

func (m *model) genOpen() *op {
	h := m.rng.IntN(numHandles)
	p := m.createPath()
	if m.chance(70) {
		p = m.filePath()
	}
	flags := unix.O_RDWR
	if m.chance(25) {
		flags |= unix.O_APPEND
	}
	if m.chance(40) {
		flags |= unix.O_CREAT
		if m.chance(10) {
			flags |= unix.O_EXCL
		}
	}
	if m.chance(4) {
		flags |= unix.O_TRUNC
	}
	mode := createMode[m.rng.IntN(len(createMode))]
	return &op{
		desc:    fmt.Sprintf("open h%d %q %s mode=%04o", h, p, flagString(flags), mode),
		paths:   []string{p, parentPath(p)},
		handles: []int{h},
		run: func(s *side) (o outcome) {
			if s.h[h] >= 0 {
				o.do("close", unix.Close(s.h[h]))
				s.h[h] = -1
			}
			fd, err := unix.Open(s.abs(p), flags|unix.O_CLOEXEC, mode)
			if o.do("open", err) {
				s.h[h] = fd
			}
			return o
		},
	}
}

func (m *model) genClose() *op {
	h := m.openHandle()
	if h < 0 {
		return m.genOpen()
	}
	return &op{
		desc: fmt.Sprintf("close h%d", h),
		run: func(s *side) (o outcome) {
			o.do("close", unix.Close(s.h[h]))
			s.h[h] = -1
			return o
		},
	}
}

// isAppend reports whether handle h was opened with O_APPEND.
func (m *model) isAppend(h int) bool {
	fl, err := unix.FcntlInt(uintptr(m.ref.h[h]), unix.F_GETFL, 0)
	return err == nil && fl&unix.O_APPEND != 0
}

func (m *model) genHandleWrite() *op {
	h := m.openHandle()
	if h < 0 {
		return m.genOpen()
	}
	size, pos := m.handleSize(h)
	if m.chance(60) {
		n := m.ioLen(maxFileSize)
		off := m.writeOffset(size, n)
		end := off
		if m.isAppend(h) {
			end = size // Linux pwrite on O_APPEND fds appends
		}
		n = int(max(0, min(int64(n), maxFileSize-end)))
		data, what := m.data(n)
		return &op{
			desc:    fmt.Sprintf("pwrite h%d off=%d len=%d data=%s", h, off, n, what),
			handles: []int{h},
			run: func(s *side) (o outcome) {
				k, err := unix.Pwrite(s.h[h], data, off)
				o.n = int64(k)
				o.do("pwrite", err)
				return o
			},
		}
	}
	if m.isAppend(h) {
		pos = size
	}
	n := m.ioLen(maxFileSize - pos)
	data, what := m.data(n)
	return &op{
		desc:    fmt.Sprintf("write h%d (pos=%d) len=%d data=%s", h, pos, n, what),
		handles: []int{h},
		run: func(s *side) (o outcome) {
			k, err := unix.Write(s.h[h], data)
			o.n = int64(k)
			o.do("write", err)
			return o
		},
	}
}

func (m *model) genHandleRead() *op {
	h := m.openHandle()
	if h < 0 {
		return m.genOpen()
	}
	size, _ := m.handleSize(h)
	n := m.ioLen(maxIOSize)
	if m.chance(50) {
		off := m.rng.Int64N(size + 4096)
		return &op{
			desc: fmt.Sprintf("pread h%d off=%d len=%d", h, off, n),
			run: func(s *side) (o outcome) {
				buf := make([]byte, n)
				k, err := readFullAt(s.h[h], buf, off)
				o.n, o.data = int64(k), buf[:k]
				o.do("pread", err)
				return o
			},
		}
	}
	return &op{
		desc: fmt.Sprintf("read h%d len=%d", h, n),
		run: func(s *side) (o outcome) {
			buf := make([]byte, n)
			got := 0
			for got < n { // short reads are legitimate; loop to compare totals
				k, err := unix.Read(s.h[h], buf[got:])
				if !o.do("read", err) || k == 0 {
					break
				}
				got += k
			}
			o.n, o.data = int64(got), buf[:got]
			return o
		},
	}
}

func (m *model) genHandleSeek() *op {
	h := m.openHandle()
	if h < 0 {
		return m.genOpen()
	}
	whence, off := unix.SEEK_SET, m.rng.Int64N(maxFileSize/2)
	switch m.rng.IntN(3) {
	case 1:
		whence, off = unix.SEEK_CUR, m.rng.Int64N(128<<10)-64<<10
	case 2:
		whence, off = unix.SEEK_END, m.rng.Int64N(64<<10)-32<<10
	}
	return &op{
		desc: fmt.Sprintf("lseek h%d off=%d whence=%d", h, off, whence),
		run: func(s *side) (o outcome) {
			pos, err := unix.Seek(s.h[h], off, whence)
			o.n = pos
			o.do("lseek", err)
			return o
		},
	}
}

func (m *model) genHandleTruncate() *op {
	h := m.openHandle()
	if h < 0 {
		return m.genOpen()
	}
	size, _ := m.handleSize(h)
	size = m.newSize(size)
	return &op{
		desc:    fmt.Sprintf("ftruncate h%d size=%d", h, size),
		handles: []int{h},
		run: func(s *side) (o outcome) {
			o.do("ftruncate", unix.Ftruncate(s.h[h], size))
			return o
		},
	}
}

func (m *model) genHandleFallocate() *op {
	h := m.openHandle()
	if h < 0 {
		return m.genOpen()
	}
	size, _ := m.handleSize(h)
	mode, off, length, desc := m.fallocParams(size)
	return &op{
		desc:    fmt.Sprintf("fallocate h%d %s", h, desc),
		handles: []int{h},
		run: func(s *side) (o outcome) {
			o.do("fallocate", unix.Fallocate(s.h[h], mode, off, length))
			return o
		},
	}
}

func (m *model) genHandleSync() *op {
	h := m.openHandle()
	if h < 0 {
		return m.genOpen()
	}
	calls := []struct {
		name string
		fn   func(int) error
	}{{"fsync", unix.Fsync}, {"fdatasync", unix.Fdatasync}, {"syncfs", unix.Syncfs}}
	c := calls[m.rng.IntN(len(calls))]
	return &op{
		desc:    fmt.Sprintf("%s h%d", c.name, h),
		handles: []int{h},
		run: func(s *side) (o outcome) {
			o.do(c.name, c.fn(s.h[h]))
			return o
		},
	}
}

// fileRef names a file either by a handle (h >= 0) or by a path.
type fileRef struct {
	h    int
	path string
}

func (f fileRef) String() string {
	if f.h >= 0 {
		return fmt.Sprintf("h%d", f.h)
	}
	return fmt.Sprintf("%q", f.path)
}

// fileRef picks an open handle a quarter of the time, else a path, and
// returns the file's current size.
func (m *model) fileRef(forWrite bool) (fileRef, int64) {
	if h := m.openHandle(); h >= 0 && m.chance(25) {
		size, _ := m.handleSize(h)
		return fileRef{h: h}, size
	}
	p := m.filePath()
	if forWrite {
		p = m.fileOrNewPath()
	}
	return fileRef{h: -1, path: p}, m.sizeOf(p)
}

// open returns an fd for f (opening the path with flags) and a function
// that releases it.
func (f fileRef) open(s *side, flags int, o *outcome, call string) (int, func(), bool) {
	if f.h >= 0 {
		return s.h[f.h], func() {}, true
	}
	fd, err := unix.Open(s.abs(f.path), flags|unix.O_CLOEXEC, 0o644)
	if !o.do(call, err) {
		return -1, nil, false
	}
	return fd, func() { o.do("close", unix.Close(fd)) }, true
}

// touch adds f to the op's compared state.
func (f fileRef) touch(o *op) {
	if f.h >= 0 {
		o.handles = append(o.handles, f.h)
	} else {
		o.paths = append(o.paths, f.path)
	}
}

func (m *model) genCopyRange() *op {
	src, srcSize := m.fileRef(false)
	dst, dstSize := m.fileRef(true)
	srcOff := m.rng.Int64N(srcSize + 1)
	switch r := m.rng.IntN(100); {
	case r < 20:
		srcOff = 0
	case r < 25:
		srcOff = srcSize + m.rng.Int64N(64<<10) // nothing to copy
	}
	n := m.ioLen(maxIOSize)
	dstOff := m.writeOffset(dstSize, n)
	n = int(max(0, min(int64(n), maxFileSize-dstOff)))
	o := &op{desc: fmt.Sprintf("copy_file_range %v@%d -> %v@%d len=%d", src, srcOff, dst, dstOff, n)}
	dst.touch(o)
	o.run = func(s *side) (o outcome) {
		sfd, sclose, ok := src.open(s, unix.O_RDONLY, &o, "open src")
		if !ok {
			return o
		}
		defer sclose()
		dfd, dclose, ok := dst.open(s, unix.O_WRONLY|unix.O_CREAT, &o, "open dst")
		if !ok {
			return o
		}
		defer dclose()
		so, do := srcOff, dstOff
		// Copies may legitimately be short (FUSE, splice fallbacks); loop
		// and compare totals. Always call once, so errors for empty copies
		// are compared too.
		for first := true; first || int(o.n) < n; first = false {
			k, err := unix.CopyFileRange(sfd, &so, dfd, &do, n-int(o.n), 0)
			if !o.do("copy_file_range", err) || k == 0 {
				break
			}
			o.n += int64(k)
		}
		return o
	}
	return o
}

func (m *model) genSeekData() *op {
	f, _ := m.fileRef(false)
	return &op{
		desc: fmt.Sprintf("check SEEK_DATA/SEEK_HOLE on %v", f),
		run: func(s *side) (o outcome) {
			fd, release, ok := f.open(s, unix.O_RDONLY, &o, "open")
			if !ok {
				return o
			}
			defer release()
			pos, _ := unix.Seek(fd, 0, unix.SEEK_CUR)
			defer unix.Seek(fd, pos, unix.SEEK_SET) // handles keep their offset
			content, errS := readAllAt(fd, 0)
			if errS != "" {
				o.strs = []string{errS}
				return o
			}
			o.strs = holeViolations(fd, content)
			return o
		},
	}
}

// holeViolations checks the one property of SEEK_DATA/SEEK_HOLE that holds
// on every file system: each nonzero byte lies in a reported data region.
// Where holes are reported (granularity, whether at all) differs, so the
// two sides' answers are not compared with each other.
func holeViolations(fd int, content []byte) []string {
	size := int64(len(content))
	nonzero := func(from, to int64) int64 { // first nonzero byte in [from,to), or -1
		for i := from; i < min(to, size); i++ {
			if content[i] != 0 {
				return i
			}
		}
		return -1
	}
	var bad []string
	for pos := int64(0); pos < size && len(bad) == 0; {
		data, err := unix.Seek(fd, pos, unix.SEEK_DATA)
		if err == unix.ENXIO {
			if i := nonzero(pos, size); i >= 0 {
				bad = append(bad, fmt.Sprintf("SEEK_DATA(%d)=ENXIO but byte %d is nonzero", pos, i))
			}
			break
		}
		if err != nil {
			bad = append(bad, fmt.Sprintf("SEEK_DATA(%d): %v", pos, err))
			break
		}
		if data < pos {
			bad = append(bad, fmt.Sprintf("SEEK_DATA(%d)=%d went backwards", pos, data))
			break
		}
		if i := nonzero(pos, data); i >= 0 {
			bad = append(bad, fmt.Sprintf("SEEK_DATA(%d)=%d skips nonzero byte %d", pos, data, i))
			break
		}
		if data >= size {
			break
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			bad = append(bad, fmt.Sprintf("SEEK_HOLE(%d): %v", data, err))
			break
		}
		if hole <= data || hole > size {
			bad = append(bad, fmt.Sprintf("SEEK_HOLE(%d)=%d, want in (%d, %d]", data, hole, data, size))
			break
		}
		pos = hole
	}
	return bad
}

// xattrOps are the xattr calls on one kind of target.
type xattrOps struct {
	set    func(s *side, name string, val []byte, flags int) error
	get    func(s *side, name string, buf []byte) (int, error)
	list   func(s *side, buf []byte) (int, error)
	remove func(s *side, name string) error
}

var xattrNamePool = []string{"user.a", "user.b", "user.longer.attribute.name", "user.empty"}

// xattrTarget picks a handle (f* calls), a path not followed (l* calls,
// which user.* refuses on symlinks) or a followed path.
func (m *model) xattrTarget() (string, xattrOps, *op) {
	o := &op{}
	if h := m.openHandle(); h >= 0 && m.chance(20) {
		o.handles = []int{h}
		return fmt.Sprintf("h%d", h), xattrOps{
			set:    func(s *side, n string, v []byte, f int) error { return unix.Fsetxattr(s.h[h], n, v, f) },
			get:    func(s *side, n string, b []byte) (int, error) { return unix.Fgetxattr(s.h[h], n, b) },
			list:   func(s *side, b []byte) (int, error) { return unix.Flistxattr(s.h[h], b) },
			remove: func(s *side, n string) error { return unix.Fremovexattr(s.h[h], n) },
		}, o
	}
	p := m.anyPath()
	o.paths = []string{p}
	if m.chance(15) {
		return fmt.Sprintf("l:%q", p), xattrOps{
			set:    func(s *side, n string, v []byte, f int) error { return unix.Lsetxattr(s.abs(p), n, v, f) },
			get:    func(s *side, n string, b []byte) (int, error) { return unix.Lgetxattr(s.abs(p), n, b) },
			list:   func(s *side, b []byte) (int, error) { return unix.Llistxattr(s.abs(p), b) },
			remove: func(s *side, n string) error { return unix.Lremovexattr(s.abs(p), n) },
		}, o
	}
	return fmt.Sprintf("%q", p), xattrOps{
		set:    func(s *side, n string, v []byte, f int) error { return unix.Setxattr(s.abs(p), n, v, f) },
		get:    func(s *side, n string, b []byte) (int, error) { return unix.Getxattr(s.abs(p), n, b) },
		list:   func(s *side, b []byte) (int, error) { return unix.Listxattr(s.abs(p), b) },
		remove: func(s *side, n string) error { return unix.Removexattr(s.abs(p), n) },
	}, o
}

func (m *model) genXattr() *op {
	where, x, o := m.xattrTarget()
	name := xattrNamePool[m.rng.IntN(len(xattrNamePool))]
	if m.chance(2) {
		name = "user." + strings.Repeat("x", 300) // beyond XATTR_NAME_MAX: ERANGE
	}
	switch r := m.rng.IntN(100); {
	case r < 45:
		val := make([]byte, m.rng.IntN(200))
		if name == "user.empty" {
			val = nil
		}
		m.bytesRNG.Read(val)
		flags := []int{0, 0, unix.XATTR_CREATE, unix.XATTR_REPLACE}[m.rng.IntN(4)]
		o.desc = fmt.Sprintf("setxattr %s %s len=%d flags=%d", where, name, len(val), flags)
		o.run = func(s *side) (o outcome) {
			o.do("setxattr", x.set(s, name, val, flags))
			return o
		}
	case r < 65:
		size := 64 << 10
		switch r := m.rng.IntN(100); {
		case r < 15:
			size = 0 // just ask for the size
		case r < 25:
			size = 1 + m.rng.IntN(8) // likely ERANGE
		}
		o.desc = fmt.Sprintf("getxattr %s %s bufsize=%d", where, name, size)
		o.run = func(s *side) (o outcome) {
			buf := make([]byte, size)
			n, err := x.get(s, name, buf)
			if o.do("getxattr", err) {
				o.n = int64(n)
				if size > 0 {
					o.data = buf[:n]
				}
			}
			return o
		}
	case r < 80:
		o.desc = fmt.Sprintf("listxattr %s", where)
		o.run = func(s *side) (o outcome) {
			names, err := xattrNames(func(b []byte) (int, error) { return x.list(s, b) })
			if o.do("listxattr", err) {
				for _, n := range names {
					if strings.HasPrefix(n, "user.") {
						o.strs = append(o.strs, n)
					}
				}
			}
			return o
		}
	default:
		o.desc = fmt.Sprintf("removexattr %s %s", where, name)
		o.run = func(s *side) (o outcome) {
			o.do("removexattr", x.remove(s, name))
			return o
		}
	}
	return o
}
