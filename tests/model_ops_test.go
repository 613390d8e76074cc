package tests

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// The model's operations. Each generator draws its parameters once and
// returns an op whose run closure replays them on either side.

func (m *model) genOp() *op {
	unlinkWeight := 4
	if len(m.snap.files)+len(m.snap.links) >= maxFiles-4 {
		unlinkWeight = 20 // keep the tree from saturating
	}
	kinds := []struct {
		weight int
		gen    func() *op
	}{
		{14, m.genWrite}, {4, m.genAppend}, {5, m.genRead}, {5, m.genTruncate},
		{4, m.genFallocate}, {8, m.genRename}, {3, m.genLink}, {unlinkWeight, m.genUnlink},
		{2, m.genMkdir}, {2, m.genRmdir}, {2, m.genSymlink}, {2, m.genReadlink},
		{2, m.genChmod}, {2, m.genChown}, {6, m.genXattr}, {4, m.genCopyRange}, {2, m.genSeekData},
		{2, m.genStat}, {3, m.genOpen}, {2, m.genClose}, {6, m.genHandleWrite},
		{3, m.genHandleRead}, {1, m.genHandleSeek}, {2, m.genHandleTruncate},
		{2, m.genHandleFallocate}, {1, m.genHandleSync},
	}
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	r := m.rng.IntN(total)
	for _, k := range kinds {
		if r < k.weight {
			return k.gen()
		}
		r -= k.weight
	}
	panic("unreachable")
}

// withFile opens p, runs fn on the fd and closes it, recording the first
// failing call in the outcome.
func withFile(s *side, p string, flags int, mode uint32, fn func(fd int, o *outcome)) (o outcome) {
	fd, err := unix.Open(s.abs(p), flags|unix.O_CLOEXEC, mode)
	if !o.do("open", err) {
		return o
	}
	fn(fd, &o)
	o.do("close", unix.Close(fd))
	return o
}

func (m *model) genWrite() *op {
	p := m.fileOrNewPath()
	flags := unix.O_WRONLY | unix.O_CREAT
	size := m.sizeOf(p)
	switch r := m.rng.IntN(100); {
	case r < 5:
		flags |= unix.O_TRUNC
		size = 0
	case r < 10:
		flags |= unix.O_EXCL
	}
	mode := createMode[m.rng.IntN(len(createMode))]
	n := m.ioLen(maxFileSize)
	off := m.writeOffset(size, n)
	data, what := m.data(n)
	return &op{
		desc:  fmt.Sprintf("write %q %s mode=%04o off=%d len=%d data=%s", p, flagString(flags), mode, off, n, what),
		paths: []string{p, parentPath(p)},
		run: func(s *side) outcome {
			return withFile(s, p, flags, mode, func(fd int, o *outcome) {
				k, err := unix.Pwrite(fd, data, off)
				o.n = int64(k)
				o.do("pwrite", err)
			})
		},
	}
}

func (m *model) genAppend() *op {
	p := m.fileOrNewPath()
	n := m.ioLen(maxFileSize - m.sizeOf(p))
	data, what := m.data(n)
	flags := unix.O_WRONLY | unix.O_APPEND | unix.O_CREAT
	return &op{
		desc:  fmt.Sprintf("append %q len=%d data=%s", p, n, what),
		paths: []string{p, parentPath(p)},
		run: func(s *side) outcome {
			return withFile(s, p, flags, 0o644, func(fd int, o *outcome) {
				k, err := unix.Write(fd, data)
				o.n = int64(k)
				o.do("write", err)
			})
		},
	}
}

func (m *model) genRead() *op {
	p := m.filePath()
	size := m.sizeOf(p)
	off := m.rng.Int64N(size + 1)
	if m.chance(15) {
		off = size + m.rng.Int64N(1<<20) // beyond EOF
	}
	n := m.ioLen(maxIOSize)
	return &op{
		desc: fmt.Sprintf("read %q off=%d len=%d", p, off, n),
		run: func(s *side) outcome {
			return withFile(s, p, unix.O_RDONLY, 0, func(fd int, o *outcome) {
				buf := make([]byte, n)
				k, err := readFullAt(fd, buf, off)
				o.n, o.data = int64(k), buf[:k]
				o.do("pread", err)
			})
		},
	}
}

func (m *model) genTruncate() *op {
	p := m.filePath()
	size := m.newSize(m.sizeOf(p))
	return &op{
		desc:  fmt.Sprintf("truncate %q size=%d", p, size),
		paths: []string{p},
		run: func(s *side) (o outcome) {
			o.do("truncate", unix.Truncate(s.abs(p), size))
			return o
		},
	}
}

// fallocParams picks a mode (0 or PUNCH_HOLE|KEEP_SIZE) and a range; mode
// 0 may extend the file, so it stays within maxFileSize.
func (m *model) fallocParams(size int64) (mode uint32, off, length int64, desc string) {
	if m.chance(50) {
		length = 1 + int64(m.ioLen(maxIOSize))
		off = m.writeOffset(size, int(length))
		length = min(length, maxFileSize-off)
		desc = "mode=0"
	} else {
		mode = unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE
		off = m.rng.Int64N(size + 64<<10)
		length = 1 + m.rng.Int64N(2*maxIOSize)
		if m.chance(30) { // page-aligned, the common case for real callers
			off, length = off&^4095, (length+4095)&^4095
		}
		desc = "PUNCH_HOLE|KEEP_SIZE"
	}
	if m.chance(3) {
		length = 0 // EINVAL
	}
	return mode, off, length, fmt.Sprintf("%s off=%d len=%d", desc, off, length)
}

func (m *model) genFallocate() *op {
	p := m.filePath()
	mode, off, length, desc := m.fallocParams(m.sizeOf(p))
	return &op{
		desc:  fmt.Sprintf("fallocate %q %s", p, desc),
		paths: []string{p},
		run: func(s *side) outcome {
			return withFile(s, p, unix.O_RDWR, 0, func(fd int, o *outcome) {
				o.do("fallocate", unix.Fallocate(fd, mode, off, length))
			})
		},
	}
}

func (m *model) genRename() *op {
	src := m.existingPath()
	if m.chance(15) {
		src = m.anyPath()
	}
	var flags uint
	flagName := "rename"
	switch r := m.rng.IntN(100); {
	case r < 20:
		flags, flagName = unix.RENAME_NOREPLACE, "renameat2(NOREPLACE)"
	case r < 40:
		flags, flagName = unix.RENAME_EXCHANGE, "renameat2(EXCHANGE)"
	}
	dst := m.renameTarget(src, flags)
	o := &op{
		desc:  fmt.Sprintf("%s %q -> %q", flagName, src, dst),
		paths: []string{src, dst, parentPath(src), parentPath(dst)},
		run: func(s *side) (o outcome) {
			if flags == 0 {
				o.do("rename", unix.Rename(s.abs(src), s.abs(dst)))
			} else {
				o.do("renameat2", unix.Renameat2(unix.AT_FDCWD, s.abs(src), unix.AT_FDCWD, s.abs(dst), flags))
			}
			return o
		},
	}
	if flags == 0 {
		o.norm = normNotEmpty
	}
	return o
}

// renameTarget picks a destination for src such that moving a directory
// (or, for an exchange, either directory) keeps the tree depth bounded.
func (m *model) renameTarget(src string, flags uint) string {
	fits := func(p string, dirPath string) bool {
		e, ok := m.entry(dirPath)
		if !ok || e.typ != unix.S_IFDIR {
			return true
		}
		return pathDepth(p) <= maxDirDepth && pathDepth(p)+e.height <= maxDirDepth+1
	}
	for range 5 {
		var dst string
		switch r := m.rng.IntN(100); {
		case r < 45:
			dst = m.newPath()
		case r < 90:
			dst = m.existingPath()
		default:
			dst = m.anyPath()
		}
		if fits(dst, src) && (flags != unix.RENAME_EXCHANGE || fits(src, dst)) {
			return dst
		}
	}
	return joinPath(parentPath(src), m.name())
}

// normNotEmpty: rmdir and rename onto a non-empty directory may fail with
// ENOTEMPTY or EEXIST; POSIX allows both, so they compare equal.
func normNotEmpty(e syscall.Errno) syscall.Errno {
	if e == unix.EEXIST {
		return unix.ENOTEMPTY
	}
	return e
}

func (m *model) genLink() *op {
	src := m.anyPath()
	if nd := m.nonDirs(); len(nd) > 0 && m.chance(80) {
		src = m.pick(nd).path
	}
	dst := m.createPath()
	return &op{
		desc:  fmt.Sprintf("link %q -> %q", src, dst),
		paths: []string{src, dst, parentPath(dst)},
		run: func(s *side) (o outcome) {
			o.do("link", unix.Link(s.abs(src), s.abs(dst)))
			return o
		},
	}
}

func (m *model) genUnlink() *op {
	p := m.anyPath()
	if hp := m.handlePaths(); len(hp) > 0 && m.chance(30) {
		p = hp[m.rng.IntN(len(hp))] // unlink a file that is still open
	} else if nd := m.nonDirs(); len(nd) > 0 && m.chance(85) {
		p = m.pick(nd).path
	}
	return &op{
		desc:  fmt.Sprintf("unlink %q", p),
		paths: []string{p, parentPath(p)},
		run: func(s *side) (o outcome) {
			o.do("unlink", unix.Unlink(s.abs(p)))
			return o
		},
	}
}

func (m *model) genMkdir() *op {
	p := m.existingPath()
	if len(m.snap.dirs)-1 < maxDirs && m.chance(85) {
		p = joinPath(m.dirUpTo(maxDirDepth-1).path, m.name())
	}
	mode := []uint32{0o755, 0o700, 0o777, 0o555}[m.rng.IntN(4)]
	return &op{
		desc:  fmt.Sprintf("mkdir %q mode=%04o", p, mode),
		paths: []string{p, parentPath(p)},
		run: func(s *side) (o outcome) {
			o.do("mkdir", unix.Mkdir(s.abs(p), mode))
			return o
		},
	}
}

func (m *model) genRmdir() *op {
	p := m.anyPath()
	var empty []refEntry
	for _, d := range m.snap.dirs[1:] { // dirs[0] is the root
		if d.empty {
			empty = append(empty, d)
		}
	}
	switch r := m.rng.IntN(100); {
	case r < 40 && len(empty) > 0:
		p = m.pick(empty).path
	case r < 75 && len(m.snap.dirs) > 1:
		p = m.pick(m.snap.dirs[1:]).path
	}
	return &op{
		desc:  fmt.Sprintf("rmdir %q", p),
		paths: []string{p, parentPath(p)},
		norm:  normNotEmpty,
		run: func(s *side) (o outcome) {
			o.do("rmdir", unix.Rmdir(s.abs(p)))
			return o
		},
	}
}

func (m *model) genSymlink() *op {
	p := m.createPath()
	target := m.symlinkTarget(p)
	return &op{
		desc:  fmt.Sprintf("symlink %q -> %q", p, target),
		paths: []string{p, parentPath(p)},
		run: func(s *side) (o outcome) {
			o.do("symlink", unix.Symlink(target, s.abs(p)))
			return o
		},
	}
}

func (m *model) genReadlink() *op {
	p := m.anyPath()
	if len(m.snap.links) > 0 && m.chance(60) {
		p = m.pick(m.snap.links).path
	}
	return &op{
		desc: fmt.Sprintf("readlink %q", p),
		run: func(s *side) (o outcome) {
			target, err := readlink(s.abs(p))
			if o.do("readlink", err) {
				o.strs = []string{target}
			}
			return o
		},
	}
}

func (m *model) genChmod() *op {
	mode := uint32(m.rng.IntN(0o1000))
	if h := m.openHandle(); h >= 0 && m.chance(20) {
		return &op{
			desc:    fmt.Sprintf("fchmod h%d mode=%04o", h, mode),
			handles: []int{h},
			run: func(s *side) (o outcome) {
				o.do("fchmod", unix.Fchmod(s.h[h], mode))
				return o
			},
		}
	}
	p := m.anyPath()
	return &op{
		desc:  fmt.Sprintf("chmod %q mode=%04o", p, mode),
		paths: []string{p},
		run: func(s *side) (o outcome) {
			o.do("chmod", unix.Chmod(s.abs(p), mode))
			return o
		},
	}
}

// genChown changes owner and group, of an open file (which may have
// buffered writes) or of a path; a chown also drops set-user-ID.
func (m *model) genChown() *op {
	ids := []int{0, 1000, 1234}
	uid, gid := ids[m.rng.IntN(len(ids))], ids[m.rng.IntN(len(ids))]
	if h := m.openHandle(); h >= 0 && m.chance(50) {
		return &op{
			desc:    fmt.Sprintf("fchown h%d %d:%d", h, uid, gid),
			handles: []int{h},
			run: func(s *side) (o outcome) {
				o.do("fchown", unix.Fchown(s.h[h], uid, gid))
				return o
			},
		}
	}
	p := m.anyPath()
	return &op{
		desc:  fmt.Sprintf("lchown %q %d:%d", p, uid, gid),
		paths: []string{p},
		run: func(s *side) (o outcome) {
			o.do("lchown", unix.Lchown(s.abs(p), uid, gid))
			return o
		},
	}
}

func (m *model) genStat() *op {
	p := m.anyPath()
	return &op{
		desc:  fmt.Sprintf("stat %q", p),
		paths: []string{p},
		run:   func(*side) outcome { return outcome{} },
	}
}
