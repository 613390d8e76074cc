package namespace

import (
	"errors"
	"strings"
	"syscall"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/exclude"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/versions"
	"github.com/doppelfs/doppel/internal/vfs"
)

// linksInView is the count for chains through a clone made before there
// were directory maps (linkCounter is exact, but needs them): the names
// file ident has in clone's view, counted from its link count where its
// contents are, minus the names it has there that some clone on the way
// up certainly does not show (outside the subtree that clone pinned, or
// excluded by it). near is the file as the clone's source directory shows
// it, ident where its contents are.
//
// A name is mapped level by level by its path, exact only while the clone
// in between still reads the directory the next clone copied through its
// pin. Where not, near's own entries are used and its names still pending
// in stub directories are all counted: a count one too high keeps a file
// until the clone goes; one too few would free it while a name is left.
func (v *FS) linksInView(clone uint64, near, ident source) (uint32, error) {
	levels, ok, err := v.viewLevels(clone, ident.pin)
	if err != nil || !ok {
		return ident.n.Nlink, err // not mapped: count every name
	}
	if len(levels) > 1 && !levels[0].relKnown && near.pin == levels[0].pin {
		return namesBelow(near, levels[0])
	}
	deepest := levels[len(levels)-1].origin
	links := int64(ident.n.Nlink)
	err = eachName(ident.r, ident.ino, func(parent uint64, name string) error {
		dir, in, err := relPathAsOf(ident.r, parent, deepest)
		if err != nil {
			return err
		}
		if !in || !inView(levels, joinRel(dir, name)) {
			links--
		}
		return nil
	})
	return uint32(max(links, 1)), err
}

// namesBelow counts the names file near has as the clone of level l shows
// them: near's link count, minus its entries (as of l's pin) outside l's
// origin or excluded by l. Names near has pending in stub directories
// have no entries and are counted.
func namesBelow(near source, l viewLevel) (uint32, error) {
	links := int64(near.n.Nlink)
	err := eachName(near.r, near.ino, func(parent uint64, name string) error {
		dir, in, err := relPathAsOf(near.r, parent, l.origin)
		if err != nil {
			return err
		}
		if !in || excludedPath(l.xs, joinRel(dir, name), false) {
			links--
		}
		return nil
	})
	return uint32(max(links, 1)), err
}

// viewLevel is one clone on the way from a clone down to where contents
// are.
type viewLevel struct {
	pin    uint64
	origin uint64      // the directory it cloned
	xs     exclude.Set // its exclusions, relative to origin
	// rel is the path, relative to the next level's origin, of the
	// directory the clone's origin read through its pin; known only if
	// it did (see linksInView).
	rel      string
	relKnown bool
}

// viewLevels lists the clones from clone down to the one whose pin is pin,
// the clone first. ok is false when the chain does not lead there.
func (v *FS) viewLevels(clone, pin uint64) ([]viewLevel, bool, error) {
	var levels []viewLevel
	var above schema.Inode // the origin of the level above, as of its pin
	for c := clone; c != 0 && len(levels) < 1<<12; {
		rec, err := loadCloneOrGone(v.meta, c)
		if errors.Is(err, meta.ErrNotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		xs, err := exclude.Parse(rec.Excludes)
		if err != nil {
			return nil, false, err
		}
		if i := len(levels) - 1; i >= 0 && above.Stub && above.Origin.Pin == rec.Pin {
			l := &levels[i]
			if l.rel, l.relKnown, err = relPathAsOf(versions.AsOf(v.meta, rec.Pin), above.Origin.Base, rec.Origin); err != nil {
				return nil, false, err
			}
		}
		levels = append(levels, viewLevel{pin: rec.Pin, origin: rec.Origin, xs: xs})
		if rec.Pin == pin {
			return levels, true, nil
		}
		if above, err = loadInode(versions.AsOf(v.meta, rec.Pin), rec.Origin); err != nil {
			return nil, false, nil
		}
		c = above.Clone
	}
	return nil, false, nil
}

// inView maps path p, relative to the origin of the deepest of levels, up
// through the levels and reports whether the first one may show it: false
// only when some level certainly does not.
func inView(levels []viewLevel, p string) bool {
	for i := len(levels) - 1; i >= 0; i-- {
		if i < len(levels)-1 {
			l := levels[i]
			if !l.relKnown {
				return true // the mapping is not exact from here: count it
			}
			var ok bool
			if p, ok = underPath(p, l.rel); !ok {
				return false
			}
		}
		if excludedPath(levels[i].xs, p, false) {
			return false
		}
	}
	return true
}

// underPath returns p relative to dir, if p is dir or below it.
func underPath(p, dir string) (string, bool) {
	switch {
	case dir == "":
		return p, true
	case p == dir:
		return "", true
	case strings.HasPrefix(p, dir+"/"):
		return p[len(dir)+1:], true
	}
	return "", false
}

// relPathAsOf is the path of directory dir below root as r shows it, and
// whether dir is below root at all.
func relPathAsOf(r meta.Reader, dir, root uint64) (string, bool, error) {
	rel := ""
	for depth := 0; dir != root; depth++ {
		if dir == vfs.RootIno || depth > 4096 {
			return "", false, nil
		}
		parent, name, err := firstName(r, dir)
		if err != nil || parent == 0 {
			return "", false, err
		}
		if rel != "" {
			name += "/" + rel
		}
		rel, dir = name, parent
	}
	return rel, true, nil
}

// settleLinks gives each hard-linked file of clone c the link count of
// the names it really has: names in directories that were never
// materialized (the reaper deletes those whole) go with the clone.
func (v *FS) settleLinks(tx *content.Tx, c uint64) error {
	b := tx.Batch()
	inos, err := linkMapped(b, c)
	if err != nil {
		return err
	}
	for _, ino := range inos {
		n, err := loadInode(b, ino)
		if errors.Is(err, syscall.ENOENT) {
			continue
		}
		if err != nil {
			return err
		}
		names, err := countNames(b, ino)
		if err != nil {
			return err
		}
		if n.Nlink == uint32(names) || n.Nlink == 0 {
			continue
		}
		n.Nlink = uint32(names) + 1 // dropLink takes one
		if err := saveInode(tx, ino, &n); err != nil {
			return err
		}
		if err := v.dropLink(tx, ino); err != nil {
			return err
		}
	}
	return nil
}
