package namespace

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"syscall"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/ops"
	"github.com/zeebo/blake3"
)

// ScanGroups groups the regular files below paths by content, read from
// the extent maps: no file data is read, and clones are not
// materialized. With since (the path of a snapshot or any tree), content
// that tree also holds is left out: only what is new is scanned.
func (v *FS) ScanGroups(ctx context.Context, paths []string, since string) ([]ops.ContentGroup, error) {
	// Scan what has been written, also what open files still buffer.
	if err := v.flushAll(true); err != nil {
		return nil, err
	}
	defer v.pinReads.begin()() // the walk reads stubs through their pins
	snap := v.meta.Snapshot()  // one state, while writers go on
	defer snap.Close()
	groups := map[string]*ops.ContentGroup{}
	var order []string
	for _, p := range paths {
		err := v.eachFile(ctx, snap, p, func(path string, n vnode) error {
			id, err := contentID(n)
			if err != nil {
				return err
			}
			g := groups[id]
			if g == nil {
				g = &ops.ContentGroup{ID: id, Size: n.n.Size}
				groups[id] = g
				order = append(order, id)
			}
			g.Paths = append(g.Paths, path)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if since != "" {
		err := v.eachFile(ctx, snap, since, func(_ string, n vnode) error {
			id, err := contentID(n)
			delete(groups, id)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]ops.ContentGroup, 0, len(groups))
	for _, id := range order {
		if g := groups[id]; g != nil {
			slices.Sort(g.Paths)
			out = append(out, *g)
		}
	}
	return out, nil
}

// eachFile calls fn for every regular file at or below top, as r shows
// the volume.
func (v *FS) eachFile(ctx context.Context, r meta.Reader, top string, fn func(path string, n vnode) error) error {
	ino, err := v.lookupPath(top)
	if err != nil {
		return &pathError{top, err}
	}
	root, err := v.rootVnode(r, ino)
	if err != nil {
		return pathErr(top, err)
	}
	var walk func(path string, n vnode) error
	walk = func(path string, n vnode) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch n.n.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			return fn(path, n)
		case syscall.S_IFDIR:
			names, kids, err := n.children()
			if err != nil {
				return err
			}
			for _, name := range names {
				if err := walk(path+"/"+name, kids[name]); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if top == "/" {
		top = ""
	}
	return walk(top, root)
}

// contentID hashes a file's size and extent map.
func contentID(n vnode) (string, error) {
	pieces, err := n.extents()
	if err != nil {
		return "", err
	}
	h := blake3.New()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(n.n.Size))
	h.Write(b[:])
	for _, p := range pieces {
		binary.BigEndian.PutUint64(b[:], uint64(p.Off))
		h.Write(b[:])
		h.Write(p.Hash[:])
		binary.BigEndian.PutUint64(b[:], uint64(p.ChunkOff)<<32|uint64(p.Length))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}
