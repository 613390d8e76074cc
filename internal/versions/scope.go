package versions

import (
	"errors"
	"slices"
	"syscall"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Excluder returns, for the pin at version pin, which paths below the
// pin's root (relative to it) its clone leaves out; nil if none. A pin
// keeps the past only of what its clone can see: the clone never reads the
// rest, and neither does a later clone reading through it, which sees only
// what the first one showed.
type Excluder func(pin uint64) (func(rel string, dir bool) bool, error)

// SetExcluder sets how pins' exclusions are found; without one, a pin
// keeps its whole subtree.
func (r *Retainer) SetExcluder(x Excluder) { r.excluder.Store(&x) }

// dirScope is where a directory was below a pin's root, if the pin's
// clone shows it.
type dirScope struct {
	path string
	in   bool
}

// InScope reports whether ino was the root of the pin at version v, or
// below it, at that version: whether that pin keeps ino's past. known is
// false when no such pin is kept.
func (r *Retainer) InScope(v, ino uint64) (in, known bool, err error) {
	r.mu.RLock()
	pins := r.pins
	r.mu.RUnlock()
	i, ok := slices.BinarySearchFunc(pins, v, cmpPin)
	if !ok {
		return false, false, nil
	}
	if ino >= pins[i].NextIno {
		return false, true, nil // born after the pin
	}
	in, err = r.inScope(pins[i], ino)
	return in, true, err
}

// inScope reports whether the pin p keeps ino's past: ino was p.Root or
// below it at p's version, under some name its clone does not exclude. The
// answer never changes, so it is cached.
func (r *Retainer) inScope(p Pinned, ino uint64) (bool, error) {
	return r.inScopeAt(p, ino, 0)
}

// maxDepth bounds the walks up a directory chain. As of a pin, the chain
// above its root may read records of other versions (the pin kept none
// of them) and loop; below the root it reads what the pin kept, which
// never loops.
const maxDepth = 1 << 12

func (r *Retainer) inScopeAt(p Pinned, ino uint64, depth int) (bool, error) {
	if ino == p.Root {
		return true, nil
	}
	if ino == rootIno || depth > maxDepth {
		return false, nil
	}
	k := scopeKey{p.Version, ino}
	if in, ok := r.scope.Get(k); ok {
		return in, nil
	}
	var match func(string, bool) bool
	if x := r.excluder.Load(); x != nil {
		var err error
		if match, err = (*x)(p.Version); err != nil {
			return false, err
		}
	}
	var in bool
	var err error
	if match == nil {
		in, err = r.below(p, ino, depth)
	} else {
		in, err = r.visible(p, ino, match)
	}
	if err != nil {
		return false, err
	}
	r.scope.Add(k, in)
	return in, nil
}

// below reports whether some chain of parents of ino (as of p) reaches
// p.Root.
func (r *Retainer) below(p Pinned, ino uint64, depth int) (bool, error) {
	parents, err := ParentsAsOf(r.store, p.Version, ino)
	if err != nil {
		return false, err
	}
	for _, parent := range parents {
		if in, err := r.inScopeAt(p, parent, depth+1); err != nil || in {
			return in, err
		}
	}
	return false, nil
}

// visible reports whether ino had, as of p, a name below p.Root that
// match does not exclude (a directory or any name above it excluded takes
// it along). A file with one name left out and another shown is kept.
func (r *Retainer) visible(p Pinned, ino uint64, match func(string, bool) bool) (bool, error) {
	as := AsOf(r.store, p.Version)
	raw, err := as.Get(schema.InodeKey(ino))
	if errors.Is(err, meta.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	n, err := schema.DecodeInode(raw)
	if err != nil {
		return false, err
	}
	if n.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		_, in, err := r.dirPath(p, ino, match, 0)
		return in, err
	}
	names, err := namesAsOf(as, ino)
	for _, nm := range names {
		dir, in, err := r.dirPath(p, nm.parent, match, 0)
		if err != nil {
			return false, err
		}
		if in && !match(joinRel(dir, nm.name), false) {
			return true, nil
		}
	}
	return false, err
}

// dirPath is directory dir's path below p.Root as of p, if p's clone
// shows it; cached.
func (r *Retainer) dirPath(p Pinned, dir uint64, match func(string, bool) bool, depth int) (string, bool, error) {
	if dir == p.Root {
		return "", true, nil
	}
	if dir == rootIno || depth > maxDepth {
		return "", false, nil
	}
	k := scopeKey{p.Version, dir}
	if d, ok := r.dirs.Get(k); ok {
		return d.path, d.in, nil
	}
	names, err := namesAsOf(AsOf(r.store, p.Version), dir)
	if err != nil {
		return "", false, err
	}
	var d dirScope
	if len(names) > 0 {
		up, in, err := r.dirPath(p, names[0].parent, match, depth+1)
		if err != nil {
			return "", false, err
		}
		if path := joinRel(up, names[0].name); in && !match(path, true) {
			d = dirScope{path: path, in: true}
		}
	}
	r.dirs.Add(k, d)
	return d.path, d.in, nil
}

type entryName struct {
	parent uint64
	name   string
}

// namesAsOf lists ino's back-references as r shows them.
func namesAsOf(r meta.Reader, ino uint64) ([]entryName, error) {
	it, err := r.NewIter(schema.ParentRange(ino))
	if err != nil {
		return nil, err
	}
	var out []entryName
	for it.First(); it.Valid(); it.Next() {
		_, parent, name, err := schema.ParseParentKey(it.Key())
		if err != nil {
			it.Close()
			return nil, err
		}
		out = append(out, entryName{parent, name})
	}
	return out, it.Close()
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// ParentsAsOf lists the directories that held ino at version pin.
func ParentsAsOf(m meta.Reader, pin, ino uint64) ([]uint64, error) {
	it, err := AsOf(m, pin).NewIter(schema.ParentRange(ino))
	if err != nil {
		return nil, err
	}
	var out []uint64
	for it.First(); it.Valid(); it.Next() {
		_, parent, _, err := schema.ParseParentKey(it.Key())
		if err != nil {
			it.Close()
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1] != parent {
			out = append(out, parent)
		}
	}
	return out, it.Close()
}
