package tests

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Choosing paths, sizes and data for the model's operations. Everything
// here reads only the reference side and m.rng, so generation is replayable.

// Names are drawn from a small pool so that operations often collide with
// existing entries (EEXIST, renames over files, and so on).
var (
	plainNames = []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	oddNames   = []string{strings.Repeat("long-", 50) + "name", "sp ace ü", ".hidden"}
	createMode = []uint32{0o644, 0o600, 0o755, 0o666, 0o444, 0o700, 0o000}
)

func (m *model) name() string {
	if m.rng.IntN(25) == 0 {
		return oddNames[m.rng.IntN(len(oddNames))]
	}
	return plainNames[m.rng.IntN(len(plainNames))]
}

func (m *model) pick(es []refEntry) refEntry { return es[m.rng.IntN(len(es))] }

func (m *model) chance(percent int) bool { return m.rng.IntN(100) < percent }

func (m *model) nonDirs() []refEntry {
	return append(m.snap.files[:len(m.snap.files):len(m.snap.files)], m.snap.links...)
}

func (m *model) entry(p string) (refEntry, bool) {
	for _, e := range m.snap.all {
		if e.path == p {
			return e, true
		}
	}
	return refEntry{}, false
}

// dirUpTo picks a directory at most depth deep (the root always is).
func (m *model) dirUpTo(depth int) refEntry {
	var ds []refEntry
	for _, d := range m.snap.dirs {
		if d.depth <= depth {
			ds = append(ds, d)
		}
	}
	return m.pick(ds)
}

// newPath is a name in a directory that may hold files; it may exist.
func (m *model) newPath() string { return joinPath(m.dirUpTo(maxDirDepth).path, m.name()) }

// existingPath is any entry but the root, or a new path in an empty tree.
func (m *model) existingPath() string {
	if len(m.snap.all) == 0 {
		return m.newPath()
	}
	return m.pick(m.snap.all).path
}

// anyPath is mostly an existing entry, sometimes a new name, and
// sometimes a path through a non-directory (ENOTDIR, or a symlink).
func (m *model) anyPath() string {
	switch r := m.rng.IntN(100); {
	case r < 70:
		return m.existingPath()
	case r < 95 || len(m.nonDirs()) == 0:
		return m.newPath()
	default:
		return m.pick(m.nonDirs()).path + "/" + m.name()
	}
}

// filePath prefers regular files, sometimes going through a symlink.
func (m *model) filePath() string {
	r := m.rng.IntN(100)
	if r < 75 && len(m.snap.files) > 0 {
		return m.pick(m.snap.files).path
	}
	if r < 85 && len(m.snap.links) > 0 {
		return m.pick(m.snap.links).path
	}
	return m.anyPath()
}

// createPath is a path for a new file or symlink while the tree has room,
// otherwise an existing entry.
func (m *model) createPath() string {
	if len(m.snap.files)+len(m.snap.links) < maxFiles && m.chance(85) {
		return m.newPath()
	}
	return m.existingPath()
}

// fileOrNewPath is an existing file most of the time, else a new one.
func (m *model) fileOrNewPath() string {
	if m.chance(70) {
		return m.filePath()
	}
	return m.createPath()
}

// handlePaths lists the names of files currently open as handles.
func (m *model) handlePaths() []string {
	var ps []string
	for _, fd := range m.ref.h {
		var st unix.Stat_t
		if fd >= 0 && unix.Fstat(fd, &st) == nil {
			ps = append(ps, m.snap.byIno[st.Ino]...)
		}
	}
	return ps
}

// openHandle picks an open handle slot, or -1 if none is open.
func (m *model) openHandle() int {
	var open []int
	for i, fd := range m.ref.h {
		if fd >= 0 {
			open = append(open, i)
		}
	}
	if len(open) == 0 {
		return -1
	}
	return open[m.rng.IntN(len(open))]
}

// sizeOf is the size of the file at p (following symlinks), 0 if none.
func (m *model) sizeOf(p string) int64 {
	var st unix.Stat_t
	if unix.Stat(m.ref.abs(p), &st) != nil {
		return 0
	}
	return st.Size
}

// handleSize returns the size of handle h's file and its file offset.
func (m *model) handleSize(h int) (size, pos int64) {
	var st unix.Stat_t
	if unix.Fstat(m.ref.h[h], &st) == nil {
		size = st.Size
	}
	pos, _ = unix.Seek(m.ref.h[h], 0, unix.SEEK_CUR)
	return size, pos
}

// ioLen is a transfer size, mostly small, at most limit.
func (m *model) ioLen(limit int64) int {
	var n int
	switch r := m.rng.IntN(100); {
	case r < 5:
		n = 0
	case r < 45:
		n = 1 + m.rng.IntN(4096)
	case r < 75:
		n = 4096 + m.rng.IntN(60<<10)
	default:
		n = 64<<10 + m.rng.IntN(maxIOSize-64<<10+1)
	}
	return int(max(0, min(int64(n), limit)))
}

// writeOffset picks where to put n bytes in a file of the given size:
// the start, inside, at EOF, beyond EOF (leaving a hole) or aligned,
// always keeping the file within maxFileSize.
func (m *model) writeOffset(size int64, n int) int64 {
	limit := int64(maxFileSize - n)
	var off int64
	switch r := m.rng.IntN(100); {
	case r < 20:
		off = 0
	case r < 45:
		off = m.rng.Int64N(size + 1)
	case r < 65:
		off = size
	case r < 80 && limit > size:
		off = size + 1 + m.rng.Int64N(limit-size)
	default:
		align := []int64{4096, 64 << 10}[m.rng.IntN(2)]
		off = m.rng.Int64N(limit/align+1) * align
	}
	return max(0, min(off, limit))
}

// newSize is a truncation target: zero, a shrink, a grow, or invalid.
func (m *model) newSize(size int64) int64 {
	switch r := m.rng.IntN(100); {
	case r < 15:
		return 0
	case r < 50:
		return m.rng.Int64N(size + 1)
	case r < 97:
		return m.rng.Int64N(maxFileSize + 1)
	default:
		return -1 // EINVAL
	}
}

// data returns n bytes of content and a short description of it: fresh
// random bytes, a slice of a motif (repeated content, at a random shift so
// that it is not aligned with earlier copies), zeros, a short repeated
// pattern, or a shifted copy of part of an existing file.
func (m *model) data(n int) ([]byte, string) {
	b := make([]byte, n)
	switch r := m.rng.IntN(100); {
	case r < 35:
		m.bytesRNG.Read(b)
		return b, "random"
	case r < 65:
		k := m.rng.IntN(len(m.motifs))
		mo := m.motifs[k]
		shift := 0
		if m.chance(60) {
			shift = m.rng.IntN(len(mo))
		}
		for i := 0; i < n; {
			i += copy(b[i:], mo[(shift+i)%len(mo):])
		}
		return b, fmt.Sprintf("motif%d+%d", k, shift)
	case r < 75:
		return b, "zeros"
	case r < 85:
		pat := make([]byte, 1+m.rng.IntN(16))
		m.bytesRNG.Read(pat)
		for i := 0; i < n; {
			i += copy(b[i:], pat)
		}
		return b, fmt.Sprintf("pattern%d", len(pat))
	default:
		if len(m.snap.files) == 0 {
			m.bytesRNG.Read(b)
			return b, "random"
		}
		f := m.pick(m.snap.files)
		off := m.rng.Int64N(f.size + 1)
		fd, err := unix.Open(m.ref.abs(f.path), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			_, _ = readFullAt(fd, b, off)
			unix.Close(fd)
		}
		return b, fmt.Sprintf("copy(%q@%d)", f.path, off)
	}
}

// symlinkTarget makes a target for a symlink in dir: relative names that
// stay inside the tree (never "..", since renames could move the link to
// where ".." escapes the root), nested names, a self-reference (ELOOP), a
// dangling absolute path, or the empty string (ENOENT).
func (m *model) symlinkTarget(linkPath string) string {
	dir := parentPath(linkPath)
	switch r := m.rng.IntN(100); {
	case r < 50:
		var below []string
		for _, e := range m.snap.all {
			if dir == "." {
				below = append(below, e.path)
			} else if rest, ok := strings.CutPrefix(e.path, dir+"/"); ok {
				below = append(below, rest)
			}
		}
		if len(below) > 0 {
			return below[m.rng.IntN(len(below))]
		}
		return m.name()
	case r < 75:
		return m.name()
	case r < 85:
		return m.name() + "/" + m.name()
	case r < 92:
		return linkPath[strings.LastIndexByte(linkPath, '/')+1:]
	case r < 98:
		return "/nonexistent-doppel-target/" + m.name()
	default:
		return ""
	}
}

// readFullAt reads len(b) bytes at off, looping over short reads (which
// FUSE may legitimately return), and returns how many it got.
func readFullAt(fd int, b []byte, off int64) (int, error) {
	got := 0
	for got < len(b) {
		n, err := unix.Pread(fd, b[got:], off+int64(got))
		if err != nil {
			return got, err
		}
		if n == 0 {
			break
		}
		got += n
	}
	return got, nil
}

var openFlagNames = []struct {
	flag int
	name string
}{
	{unix.O_WRONLY, "O_WRONLY"}, {unix.O_RDWR, "O_RDWR"}, {unix.O_CREAT, "O_CREAT"},
	{unix.O_EXCL, "O_EXCL"}, {unix.O_TRUNC, "O_TRUNC"}, {unix.O_APPEND, "O_APPEND"},
}

func flagString(flags int) string {
	var s []string
	if flags&(unix.O_WRONLY|unix.O_RDWR) == 0 {
		s = append(s, "O_RDONLY")
	}
	for _, f := range openFlagNames {
		if flags&f.flag != 0 {
			s = append(s, f.name)
		}
	}
	return strings.Join(s, "|")
}
