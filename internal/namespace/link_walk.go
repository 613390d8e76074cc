package namespace

import (
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// mapUp returns the names among below (names of the level under l) that
// l shows pending in one of its stub directories, each with its place in
// l put first.
func (lc *linkCounter) mapUp(l linkLevel, below []viewName) ([]viewName, error) {
	var out []viewName
	for _, name := range below {
	reps:
		for _, rep := range name {
			dir, rel, st, err := lc.mapRep(l, rep)
			if err != nil {
				return nil, err
			}
			switch st {
			case repShown:
				out = append(out, append(viewName{{at: l.at, dir: dir, rel: rel}}, name...))
				break reps
			case repHidden:
				break reps
			}
		}
	}
	return out, nil
}

type repState int

const (
	repHidden repState = iota // l does not show it pending
	repShown                  // pending in a stub directory of l
	repDeeper                 // l's directory has entries of its own from a deeper level: ask the next rep
)

// mapRep finds the directory of l's clone made from rep's directory or
// the nearest one above it (as rep's level was at rep.at). A stub shows
// the name unless it excludes it; a materialized one shows it only as an
// entry of its own, unless its origin was a stub: then its entries came
// from deeper, where the name's next rep is.
func (lc *linkCounter) mapRep(l linkLevel, rep nameRep) (uint64, string, repState, error) {
	rr := lc.reader(rep.at)
	d, rel := rep.dir, rep.rel
	for depth := 0; depth < 1<<12; depth++ {
		// Only directories below the pin's root at rep.at read as they
		// were then; the clone shows nothing outside.
		in, known, err := lc.v.ret.InScope(rep.at, d)
		if err != nil {
			return 0, "", repHidden, err
		}
		if !known {
			return 0, "", repHidden, errNotExact
		}
		if !in {
			return 0, "", repHidden, nil
		}
		z, zn, ok, err := lc.mapped(l, dirMap, rep.at, d)
		if err != nil {
			return 0, "", repHidden, err
		}
		if ok {
			if zn.Stub {
				out, err := lc.v.excludedBelow(zn.Excl, rel)
				if err != nil || out {
					return 0, "", repHidden, err
				}
				return z, rel, repShown, nil
			}
			dn, err := loadInode(rr, d)
			if err != nil || !dn.Stub {
				return 0, "", repHidden, err
			}
			return 0, "", repDeeper, nil
		}
		if d == vfs.RootIno {
			break
		}
		parent, name, err := firstName(rr, d)
		if err != nil || parent == 0 {
			return 0, "", repHidden, err
		}
		rel, d = joinRel(name, rel), parent
	}
	return 0, "", repHidden, nil
}

// excludedBelow reports whether the exclusion contexts of a stub directory
// leave out path rel below it (the check materializing it, and the stubs
// it makes, level by level, would make).
func (v *FS) excludedBelow(excl []schema.ExclCtx, rel string) (bool, error) {
	for _, x := range excl {
		xs, err := v.cloneExcludes(x.Clone)
		if err != nil {
			return false, err
		}
		if excludedPath(xs, joinRel(x.Path, rel), false) {
			return true, nil
		}
	}
	return false, nil
}

// enclosingClone is the clone whose tree holds ino as r shows it: the
// clone of ino or of the nearest directory above it that has one (inodes
// made in a clone have none); 0 outside clones.
func enclosingClone(r meta.Reader, ino uint64) (uint64, error) {
	for depth := 0; depth < 1<<12; depth++ {
		n, err := loadInode(r, ino)
		if err != nil || n.Clone != 0 {
			return n.Clone, err
		}
		if ino == vfs.RootIno {
			break
		}
		if ino, _, err = firstName(r, ino); err != nil || ino == 0 {
			return 0, err
		}
	}
	return 0, nil
}

// realNames lists file y's entries as of version at. As of a pin, a
// back-reference counts only if its directory has the entry then: one
// added since to a file outside the pinned subtree reads as if it were
// there already (its records were not kept), but the directory's are.
func (lc *linkCounter) realNames(at, y uint64) ([]viewName, error) {
	var names []viewName
	r := lc.reader(at)
	err := eachName(r, y, func(parent uint64, name string) error {
		if at != 0 {
			if d, found, err := readEntry(r, parent, name); err != nil || !found || d.Ino != y {
				return err
			}
		}
		names = append(names, viewName{{at: at, dir: parent, rel: name}})
		return nil
	})
	return names, err
}
