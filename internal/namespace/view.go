package namespace

import (
	"fmt"
	"slices"
	"strings"
	"syscall"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// vnode is an inode as a reader shows it, seen through stubs without
// materializing them: read-only walks (diff, scan) use it, so that
// comparing two lazy clones writes nothing.
type vnode struct {
	v    *FS
	r    meta.Reader // where ino's records are
	pin  uint64      // the pin r shows the volume at; 0: r is the live state
	ino  uint64
	n    schema.Inode
	excl []schema.ExclCtx // exclusions that apply below it (from stubs)
}

func (v *FS) vnodeOf(r meta.Reader, ino uint64) (vnode, error) {
	n, err := loadInode(r, ino)
	return vnode{v: v, r: r, ino: ino, n: n}, err
}

// rootVnode is a vnode to start a walk at, as r shows the volume (a
// snapshot, so that the walk sees one state while writers go on).
func (v *FS) rootVnode(r meta.Reader, ino uint64) (vnode, error) {
	x, err := v.vnodeOf(r, ino)
	x.excl = x.n.Excl
	return x, err
}

// contents is where the node's entries, extents and xattrs are: itself,
// or for a stub its origin.
func (x vnode) contents() (meta.Reader, uint64, []schema.ExclCtx, error) {
	c, err := x.source()
	return c.r, c.ino, c.excl, err
}

// source is contents as a node: the node itself, or for a stub the node
// of its origin that holds its contents, with the exclusions below it.
func (x vnode) source() (vnode, error) {
	if !x.n.Stub {
		return x, nil
	}
	src, err := x.v.sourceOf(&x.n)
	// sourceOf starts from the stub's own contexts, which x.excl usually
	// holds already (inherited) but not when x was read through a pin
	// from a directory materialized in its clone: merge, do not assume.
	excl := mergeExcl(x.excl, src.excl)
	return vnode{v: x.v, r: src.r, pin: src.pin, ino: src.ino, n: src.n, excl: excl}, err
}

// mergeExcl is a's contexts followed by those of b that a lacks.
func mergeExcl(a, b []schema.ExclCtx) []schema.ExclCtx {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// own reports whether the node's contents are its own records, not read
// through a pin.
func (x vnode) own() bool { return x.pin == 0 && !x.n.Stub }

// child looks name up: ENOENT if it does not exist (or a clone left it
// out).
func (x vnode) child(name string) (vnode, error) {
	s, err := x.source()
	if err != nil {
		return vnode{}, err
	}
	r, ino, excl := s.r, s.ino, s.excl
	d, found, err := readEntry(r, ino, name)
	if err == nil && !found {
		err = syscall.ENOENT
	}
	if err != nil {
		return vnode{}, err
	}
	if out, err := x.v.excludedEntry(excl, name, d.Type == syscall.S_IFDIR); err != nil || out {
		if err == nil {
			err = syscall.ENOENT // as materializing would leave it out
		}
		return vnode{}, err
	}
	c, err := x.v.vnodeOf(r, d.Ino)
	c.pin, c.excl = s.pin, s.childExcl(c.n, name)
	return c, err
}

// childExcl is the exclusions that apply below the entry name of s, whose
// inode is n: s's, one name deeper, and n's own if n is a stub (a
// directory materialized in an older clone holds stubs whose contexts
// its own do not carry). A directory with its own records (materialized,
// or never a stub) has no exclusions of its own: materializing left out
// what they named.
func (s vnode) childExcl(n schema.Inode, name string) []schema.ExclCtx {
	if s.pin == 0 {
		return n.Excl
	}
	return mergeExcl(childExcl(s.excl, name), n.Excl)
}

func childExcl(excl []schema.ExclCtx, name string) []schema.ExclCtx {
	var out []schema.ExclCtx
	for _, e := range excl {
		out = append(out, schema.ExclCtx{Clone: e.Clone, Path: joinRel(e.Path, name)})
	}
	return out
}

// children lists the node's entries in name order; entries a clone
// excluded are left out, as materializing leaves them out.
func (x vnode) children() (names []string, out map[string]vnode, err error) {
	s, err := x.source()
	if err != nil {
		return nil, nil, err
	}
	r, ino, excl := s.r, s.ino, s.excl
	out = map[string]vnode{}
	err = eachEntry(r, ino, func(name string, d schema.Dirent) error {
		if ex, err := x.v.excludedEntry(excl, name, d.Type == syscall.S_IFDIR); err != nil || ex {
			return err
		}
		c, err := x.v.vnodeOf(r, d.Ino)
		if err != nil {
			return err
		}
		c.pin, c.excl = s.pin, s.childExcl(c.n, name)
		names = append(names, name)
		out[name] = c
		return nil
	})
	return names, out, err
}

// extents lists the node's extents: its content's identity.
func (x vnode) extents() ([]content.Piece, error) {
	r, ino, _, err := x.contents()
	if err != nil {
		return nil, err
	}
	return content.Extents(r, ino, 0, 1<<62)
}

// xattrs returns the node's extended attributes.
func (x vnode) xattrs() (map[string]string, error) {
	r, ino, _, err := x.contents()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	err = eachXattr(r, ino, func(name string, val []byte) error {
		out[name] = string(val)
		return nil
	})
	return out, err
}

// readAll reads the node's whole content (for --patch and scan).
func (x vnode) readAll(limit int64) ([]byte, error) {
	r, ino, _, err := x.contents()
	if err != nil {
		return nil, err
	}
	size := min(x.n.Size, limit)
	buf := make([]byte, size)
	return buf, x.v.eng.ReadAtFrom(r, ino, 0, buf)
}

// viewPath resolves a "/"-rooted path as r shows the volume, through stubs
// without materializing them. Symlinks are not followed.
func (v *FS) viewPath(r meta.Reader, path string) (vnode, error) {
	x, err := v.vnodeOf(r, vfs.RootIno)
	for _, name := range strings.Split(path, "/") {
		if err != nil {
			break
		}
		if name == "" || name == "." {
			continue
		}
		if !isDir(x.n.Mode) {
			err = syscall.ENOTDIR
			break
		}
		x, err = x.child(name)
	}
	if err != nil {
		return vnode{}, fmt.Errorf("%s: %w", path, err)
	}
	return x, nil
}
