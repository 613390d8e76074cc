package importer_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
)

// entry is what an import must keep of one entry of a tree.
type entry struct {
	Mode         uint32 // type and permission bits
	Uid, Gid     uint32
	Size         int64
	Atime, Mtime time.Time
	Rdev         uint32
	Target       string
	Xattrs       map[string]string
	Content      []byte
	ino          uint64
}

// tree maps paths relative to a root ("." is the root) to entries, and
// lists the groups of paths sharing an inode.
type tree struct {
	entries map[string]*entry
	links   []string
}

func (t *tree) linkGroups() {
	byIno := map[uint64][]string{}
	for p, e := range t.entries {
		if e.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			byIno[e.ino] = append(byIno[e.ino], p)
		}
	}
	for _, ps := range byIno {
		if len(ps) > 1 {
			slices.Sort(ps)
			t.links = append(t.links, strings.Join(ps, " = "))
		}
	}
	slices.Sort(t.links)
}

// hostTree snapshots a host tree. Every entry is stat'ed before any file
// is read, so that reading cannot move an atime that is compared.
func hostTree(t *testing.T, root string) *tree {
	t.Helper()
	tr := &tree{entries: map[string]*entry{}}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		e := &entry{
			Mode: st.Mode, Uid: st.Uid, Gid: st.Gid, Size: st.Size, Rdev: uint32(st.Rdev),
			Atime: time.Unix(st.Atim.Unix()), Mtime: time.Unix(st.Mtim.Unix()), ino: st.Ino,
			Xattrs: hostXattrs(t, p),
		}
		if d.Type()&fs.ModeSymlink != 0 {
			e.Target, err = os.Readlink(p)
		}
		tr.entries[rel] = e
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, e := range tr.entries {
		if e.Mode&syscall.S_IFMT == syscall.S_IFREG {
			fd, err := unix.Open(filepath.Join(root, p), unix.O_RDONLY|unix.O_NOATIME, 0)
			if err != nil {
				t.Fatal(err)
			}
			f := os.NewFile(uintptr(fd), p)
			e.Content = make([]byte, e.Size)
			_, err = f.ReadAt(e.Content, 0)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	tr.linkGroups()
	return tr
}

func hostXattrs(t *testing.T, p string) map[string]string {
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		t.Fatalf("listxattr %s: %v", p, err)
	}
	out := map[string]string{}
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if name == "" || strings.HasPrefix(name, "system.") {
			continue
		}
		val := make([]byte, 64<<10)
		m, err := unix.Lgetxattr(p, name, val)
		if err != nil {
			t.Fatalf("getxattr %s %s: %v", p, name, err)
		}
		out[name] = string(val[:m])
	}
	return out
}

// volumeTree snapshots the tree below inode root of a volume.
func volumeTree(t *testing.T, v vfs.FS, root uint64) *tree {
	t.Helper()
	tr := &tree{entries: map[string]*entry{}}
	var walk func(rel string, ino uint64)
	walk = func(rel string, ino uint64) {
		a := testutil.Must(v.GetAttr(ino))
		e := &entry{
			Mode: a.Mode, Uid: a.Uid, Gid: a.Gid, Size: a.Size, Rdev: a.Rdev,
			Atime: a.Atime, Mtime: a.Mtime, ino: ino, Xattrs: map[string]string{},
		}
		tr.entries[rel] = e
		for _, name := range testutil.Must(v.ListXattr(ino)) {
			e.Xattrs[name] = string(testutil.Must(v.GetXattr(ino, name)))
		}
		switch a.Mode & syscall.S_IFMT {
		case syscall.S_IFLNK:
			e.Target = testutil.Must(v.Readlink(ino))
		case syscall.S_IFREG:
			e.Content = readVolumeFile(t, v, ino, a.Size)
		case syscall.S_IFDIR:
			for _, d := range testutil.Must(v.ReadDir(ino)) {
				walk(filepath.Join(rel, d.Name), d.Ino)
			}
		}
	}
	walk(".", root)
	tr.linkGroups()
	return tr
}

func readVolumeFile(t *testing.T, v vfs.FS, ino uint64, size int64) []byte {
	h := testutil.Must(v.Open(ino, syscall.O_RDONLY))
	defer v.Release(h)
	buf := make([]byte, size)
	for off := 0; off < len(buf); {
		n := testutil.Must(v.Read(h, int64(off), buf[off:]))
		if n == 0 {
			t.Fatalf("inode %d: short read at %d of %d", ino, off, size)
		}
		off += n
	}
	return buf
}

// diffTrees lists how got differs from want.
func diffTrees(want, got *tree) []string {
	var d []string
	paths := slices.Sorted(maps.Keys(want.entries))
	for p := range got.entries {
		if want.entries[p] == nil {
			d = append(d, p+": only in the volume")
		}
	}
	for _, p := range paths {
		w, g := want.entries[p], got.entries[p]
		if g == nil {
			d = append(d, p+": missing in the volume")
			continue
		}
		if x := diffEntry(w, g); x != "" {
			d = append(d, p+": "+x)
		}
	}
	if !slices.Equal(want.links, got.links) {
		d = append(d, fmt.Sprintf("hard links: want %q, got %q", want.links, got.links))
	}
	return d
}

func diffEntry(w, g *entry) string {
	var d []string
	add := func(what string, want, got any) { d = append(d, fmt.Sprintf("%s want %v got %v", what, want, got)) }
	if w.Mode != g.Mode {
		add("mode", fmt.Sprintf("%o", w.Mode), fmt.Sprintf("%o", g.Mode))
	}
	if w.Uid != g.Uid || w.Gid != g.Gid {
		add("owner", fmt.Sprint(w.Uid, ":", w.Gid), fmt.Sprint(g.Uid, ":", g.Gid))
	}
	if w.Size != g.Size {
		add("size", w.Size, g.Size)
	}
	if !w.Mtime.Equal(g.Mtime) {
		add("mtime", w.Mtime, g.Mtime)
	}
	if !w.Atime.Equal(g.Atime) {
		add("atime", w.Atime, g.Atime)
	}
	if w.Rdev != g.Rdev {
		add("rdev", w.Rdev, g.Rdev)
	}
	if w.Target != g.Target {
		add("symlink target", w.Target, g.Target)
	}
	if !maps.Equal(w.Xattrs, g.Xattrs) {
		add("xattrs", w.Xattrs, g.Xattrs)
	}
	if !bytes.Equal(w.Content, g.Content) {
		d = append(d, "content differs")
	}
	return strings.Join(d, "; ")
}

func isRoot() bool { return os.Geteuid() == 0 }
