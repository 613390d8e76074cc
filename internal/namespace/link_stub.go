package namespace

import (
	"errors"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/versions"
)

// stubLink is how a stub being made for a file of the origin is linked.
type stubLink struct {
	linked bool    // its names in the clone share one inode (link map)
	key    linkKey // the link map's key for it
	lc     *linkCounter
	near   source // the file as the source directory shows it
	ident  source // where its contents are
}

// linkFor decides how a stub for file near (an entry of the directory
// being materialized, parent) is linked. A file with several names maps
// to one inode through the link map, keyed by where its contents are,
// normalized through the clones in between. Reached through a stub of a
// clone not on the clone's own chain (a stub directory moved between
// clones), its names there are not linked: each gets an inode of its own,
// as the chain cannot count them, and counting too few would free a file
// that still has a name.
func (v *FS) linkFor(b meta.Batch, parent *schema.Inode, near source) (stubLink, error) {
	l := stubLink{near: near, ident: near}
	if isDir(near.n.Mode) || near.n.Nlink < 2 {
		return l, nil
	}
	var err error
	if near.n.Stub {
		if l.ident, err = v.sourceOf(&near.n); err != nil {
			return l, err
		}
	}
	l.lc = v.newLinkCounter(parent.Clone, b)
	l.key = linkKey{l.ident.pin, l.ident.ino}
	onChain, err := l.lc.onChain(parent.Origin, near)
	if err != nil || !onChain {
		return l, err
	}
	l.linked = true
	if l.key, err = l.lc.normalize(1, l.key); err != nil && !errors.Is(err, errNotExact) {
		return l, err
	}
	return l, nil
}

// count is the link count of a new stub for l in clone: exact, or where
// the chain has no directory maps the older count, never too low.
func (l stubLink) count(v *FS, clone uint64) (uint32, error) {
	n, err := l.lc.count(l.key)
	if errors.Is(err, errNotExact) || (err == nil && n == 0) {
		return v.linksInView(clone, l.near, l.ident)
	}
	return n, err
}

// onChain reports whether every stub the clone reads through to reach
// file near belongs to the clone of its level of the chain: the parent's
// origins, then near's own.
func (lc *linkCounter) onChain(o schema.Origin, near source) (bool, error) {
	i := 1
	for _, start := range []schema.Origin{o, {Pin: near.pin, Base: near.ino}} {
		for o := start; ; {
			for {
				l, ok, err := lc.level(i)
				if errors.Is(err, errNotExact) {
					return true, nil // no maps: counted the old way
				}
				if err != nil || !ok || l.at < o.Pin {
					return false, err
				}
				if l.at == o.Pin {
					break
				}
				i++
			}
			n, err := loadInode(versions.AsOf(lc.v.meta, o.Pin), o.Base)
			if err != nil {
				return false, err
			}
			if n.Clone != 0 && n.Clone != lc.levels[i].clone && (n.Stub || start != o) {
				return false, nil
			}
			if !n.Stub {
				break
			}
			o = n.Origin
		}
	}
	return true, nil
}
