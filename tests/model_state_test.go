package tests

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// nodeState is everything the model compares about one path or open file.
// Deliberately absent, because file systems legitimately differ there:
// timestamps, st_blocks (dedup/compression/hole granularity), inode
// numbers (only which paths share one is compared), and the size and link
// count of directories (ext4 reports 4096-byte multiples and 2+subdirs,
// other file systems e.g. btrfs report 1; neither is specified by POSIX).
type nodeState struct {
	Errno      syscall.Errno // of lstat/stat/fstat; nothing else is set if nonzero
	Type       uint32        // S_IFMT bits
	Perm       uint32        // 07777 bits
	Uid, Gid   uint32
	Size       int64    // not for directories
	Nlink      uint64   // not for directories
	Target     string   // symlinks
	Xattrs     []string // user.* attributes as name=%q, sorted
	XattrErr   string   // listing/reading them failed
	Entries    []string // directory entries, sorted
	EntriesErr syscall.Errno
	Content    []byte // regular files
	ContentErr string
	Follow     *nodeState // symlinks: what stat (following) sees
}

// pathState describes abs as lstat (follow=false) or stat (follow=true)
// sees it, including content, entries and xattrs.
func pathState(abs string, follow bool) *nodeState { return pathStateInto(abs, follow, nil) }

// pathStateInto is pathState reading a file's content into buf's array
// when it is large enough (the state then aliases buf).
func pathStateInto(abs string, follow bool, buf []byte) *nodeState {
	var st unix.Stat_t
	var err error
	if follow {
		err = unix.Stat(abs, &st)
	} else {
		err = unix.Lstat(abs, &st)
	}
	if err != nil {
		return &nodeState{Errno: errnoOf(err)}
	}
	n := statState(&st)
	switch n.Type {
	case unix.S_IFREG:
		fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			n.ContentErr = "open: " + errnoOf(err).Error()
			break
		}
		n.Content, n.ContentErr = readAllAtInto(fd, st.Size, buf)
		unix.Close(fd)
	case unix.S_IFDIR:
		ents, err := os.ReadDir(abs)
		n.EntriesErr = errnoOf(err)
		for _, e := range ents {
			n.Entries = append(n.Entries, e.Name())
		}
	case unix.S_IFLNK:
		n.Target, _ = readlink(abs)
		n.Follow = pathState(abs, true)
	}
	if follow {
		n.Xattrs, n.XattrErr = userXattrs(
			func(b []byte) (int, error) { return unix.Listxattr(abs, b) },
			func(name string, b []byte) (int, error) { return unix.Getxattr(abs, name, b) })
	} else {
		n.Xattrs, n.XattrErr = userXattrs(
			func(b []byte) (int, error) { return unix.Llistxattr(abs, b) },
			func(name string, b []byte) (int, error) { return unix.Lgetxattr(abs, name, b) })
	}
	return n
}

// fdState describes the file open as fd, which may have no name left.
func fdState(fd int, buf []byte) *nodeState {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &nodeState{Errno: errnoOf(err)}
	}
	n := statState(&st)
	if n.Type == unix.S_IFREG {
		n.Content, n.ContentErr = readAllAtInto(fd, st.Size, buf)
	}
	n.Xattrs, n.XattrErr = userXattrs(
		func(b []byte) (int, error) { return unix.Flistxattr(fd, b) },
		func(name string, b []byte) (int, error) { return unix.Fgetxattr(fd, name, b) })
	return n
}

func statState(st *unix.Stat_t) *nodeState {
	n := &nodeState{Type: st.Mode & unix.S_IFMT, Perm: st.Mode & 0o7777, Uid: st.Uid, Gid: st.Gid}
	if n.Type != unix.S_IFDIR {
		n.Size, n.Nlink = st.Size, uint64(st.Nlink)
	}
	return n
}

// readAllAt reads the whole file with pread, leaving the offset alone.
// sizeHint (the stat size) saves regrowing the buffer; reading goes on to
// EOF regardless.
func readAllAt(fd int, sizeHint int64) ([]byte, string) { return readAllAtInto(fd, sizeHint, nil) }

// readAllAtInto is readAllAt into buf's array when it is large enough:
// the model reads every file an operation touched, on both sides, and
// fresh arrays of up to 2 MiB each time cost the test as much CPU as
// zeroing and collecting them.
func readAllAtInto(fd int, sizeHint int64, buf []byte) ([]byte, string) {
	dropFUSECache(fd)
	out := slices.Grow(buf[:0], int(max(sizeHint, 0))+1)
	for {
		if len(out) == cap(out) {
			out = slices.Grow(out, len(out))
		}
		n, err := unix.Pread(fd, out[len(out):cap(out)], int64(len(out)))
		if err != nil {
			return out, fmt.Sprintf("pread@%d: %v", len(out), errnoOf(err))
		}
		if n == 0 {
			return out, ""
		}
		out = out[:len(out)+n]
	}
}

// fuseSuperMagic is f_type of FUSE mounts in statfs.
const fuseSuperMagic = 0x65735546

// dropFUSECache evicts a FUSE file's clean cached pages, so that reading it
// checks what the daemon stores rather than what the kernel remembers.
// Host files keep their cache: rereading them from disk would only be slow.
func dropFUSECache(fd int) {
	var st unix.Statfs_t
	if unix.Fstatfs(fd, &st) == nil && st.Type == fuseSuperMagic {
		_ = unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
	}
}

func readlink(abs string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlink(abs, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// userXattrs lists the user.* attributes with their values, sorted. Other
// namespaces are ignored: the host may add security.* labels.
func userXattrs(list func([]byte) (int, error), get func(string, []byte) (int, error)) ([]string, string) {
	names, err := xattrNames(list)
	if err != nil {
		return nil, "list: " + errnoOf(err).Error()
	}
	var out []string
	for _, name := range names {
		if !strings.HasPrefix(name, "user.") {
			continue
		}
		buf := make([]byte, 1<<10)
		n, err := get(name, buf)
		if errnoOf(err) == unix.ERANGE {
			buf = make([]byte, 64<<10)
			n, err = get(name, buf)
		}
		if err != nil {
			return out, fmt.Sprintf("get %s: %v", name, errnoOf(err))
		}
		out = append(out, fmt.Sprintf("%s=%q", name, buf[:n]))
	}
	slices.Sort(out)
	return out, ""
}

// xattrNames calls a listxattr variant and splits the result.
func xattrNames(list func([]byte) (int, error)) ([]string, error) {
	buf := make([]byte, 1<<10)
	n, err := list(buf)
	if errnoOf(err) == unix.ERANGE {
		buf = make([]byte, 64<<10)
		n, err = list(buf)
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range strings.Split(string(buf[:n]), "\x00") {
		if s != "" {
			names = append(names, s)
		}
	}
	slices.Sort(names)
	return names, nil
}

// diffState describes how sut differs from ref, or returns "".
func diffState(ref, sut *nodeState) string {
	var d []string
	add := func(format string, args ...any) { d = append(d, fmt.Sprintf(format, args...)) }
	if ref.Errno != sut.Errno {
		return fmt.Sprintf("stat: ref=%s sut=%s", errName(ref.Errno), errName(sut.Errno))
	}
	if ref.Type != sut.Type {
		return fmt.Sprintf("type: ref=%s sut=%s", typeName(ref.Type), typeName(sut.Type))
	}
	if ref.Perm != sut.Perm {
		add("perm: ref=%04o sut=%04o", ref.Perm, sut.Perm)
	}
	if ref.Size != sut.Size {
		add("size: ref=%d sut=%d", ref.Size, sut.Size)
	}
	if ref.Nlink != sut.Nlink {
		add("nlink: ref=%d sut=%d", ref.Nlink, sut.Nlink)
	}
	if ref.Target != sut.Target {
		add("symlink target: ref=%q sut=%q", ref.Target, sut.Target)
	}
	if !slices.Equal(ref.Xattrs, sut.Xattrs) || ref.XattrErr != sut.XattrErr {
		add("user xattrs: ref=%q (%s) sut=%q (%s)", ref.Xattrs, ref.XattrErr, sut.Xattrs, sut.XattrErr)
	}
	if !slices.Equal(ref.Entries, sut.Entries) || ref.EntriesErr != sut.EntriesErr {
		add("entries: ref=%q (%s) sut=%q (%s)", ref.Entries, errName(ref.EntriesErr), sut.Entries, errName(sut.EntriesErr))
	}
	if ref.ContentErr != sut.ContentErr {
		add("reading content: ref=%q sut=%q", ref.ContentErr, sut.ContentErr)
	}
	if c := diffBytes(ref.Content, sut.Content); c != "" {
		add("content: %s", c)
	}
	if ref.Follow != nil && sut.Follow != nil {
		if f := diffState(ref.Follow, sut.Follow); f != "" {
			add("through the symlink: %s", f)
		}
	}
	return strings.Join(d, "; ")
}

// diffBytes describes the first difference between two byte strings.
func diffBytes(ref, sut []byte) string {
	if bytes.Equal(ref, sut) {
		return ""
	}
	i := 0
	for i < len(ref) && i < len(sut) && ref[i] == sut[i] {
		i++
	}
	excerpt := func(b []byte) []byte { return b[i:min(len(b), i+16)] }
	return fmt.Sprintf("lengths ref=%d sut=%d, first difference at offset %d: ref=% x sut=% x",
		len(ref), len(sut), i, excerpt(ref), excerpt(sut))
}

// treeState is a snapshot of a whole directory tree, keyed by path
// relative to its root ("." is the root).
type treeState struct {
	nodes map[string]*nodeState
	links []string // groups of paths sharing an inode, one string each
}

func snapshotTree(root string) (*treeState, error) {
	ts := &treeState{nodes: map[string]*nodeState{}}
	byIno := map[uint64][]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		ts.nodes[rel] = pathState(p, false)
		if !d.IsDir() {
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				return err
			}
			byIno[st.Ino] = append(byIno[st.Ino], rel)
		}
		return nil
	})
	for _, paths := range byIno {
		if len(paths) > 1 {
			slices.Sort(paths)
			ts.links = append(ts.links, strings.Join(paths, " = "))
		}
	}
	slices.Sort(ts.links)
	return ts, err
}

// diffTrees lists the differences between two snapshots.
func diffTrees(ref, sut *treeState) []string {
	var d []string
	paths := map[string]bool{}
	for p := range ref.nodes {
		paths[p] = true
	}
	for p := range sut.nodes {
		paths[p] = true
	}
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		r, s := ref.nodes[p], sut.nodes[p]
		switch {
		case r == nil:
			d = append(d, fmt.Sprintf("%s: only in sut", p))
		case s == nil:
			d = append(d, fmt.Sprintf("%s: missing in sut", p))
		default:
			if x := diffState(r, s); x != "" {
				d = append(d, fmt.Sprintf("%s: %s", p, x))
			}
		}
	}
	if !slices.Equal(ref.links, sut.links) {
		d = append(d, fmt.Sprintf("hard-link groups: ref=%q sut=%q", ref.links, sut.links))
	}
	return d
}

// errnoFailure stands for an error that carries no errno; it should not
// happen with raw system calls.
const errnoFailure = syscall.Errno(0xfff)

func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return errnoFailure
}

func errName(e syscall.Errno) string {
	if e == 0 {
		return "ok"
	}
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno(%d)", int(e))
}

func typeName(t uint32) string {
	switch t {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "dir"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFCHR:
		return "chardev"
	case unix.S_IFBLK:
		return "blockdev"
	case unix.S_IFSOCK:
		return "socket"
	}
	return fmt.Sprintf("type(%o)", t)
}
