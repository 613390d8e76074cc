package namespace

import (
	"errors"
	"strings"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/versions"
	"github.com/doppelfs/doppel/internal/vfs"
)

// linksInView counts the names file ident has in clone's view: its link
// count where its contents are, minus the names it has there that some
// clone on the way up does not show (outside the subtree that clone pinned,
// or excluded by it). A chain of clones of clones maps a name level by
// level, by its path below each clone's origin. Names inside directories
// that were stubs at that level have no entries yet but are in the link
// count, which is why it starts from the count; they are taken to be in
// view. (So a name pending in a stub directory outside the source of a
// clone of a subdirectory is counted too: the file then outlives its last
// visible name in the clone, until the clone goes.)
func (v *Volume) linksInView(clone uint64, ident source) (uint32, error) {
	levels, ok, err := v.viewLevels(clone, ident.pin)
	if err != nil || !ok {
		return ident.n.Nlink, err // not mapped: count every name
	}
	deepest := levels[len(levels)-1].origin
	lower, upper := schema.ParentRange(ident.ino)
	links := int64(ident.n.Nlink)
	err = scan(ident.r, lower, upper, func(k, _ []byte) error {
		_, parent, name, err := schema.ParseParentKey(k)
		if err != nil {
			return err
		}
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

// viewLevel is one clone on the way from a clone down to where contents
// are.
type viewLevel struct {
	origin uint64      // the directory it cloned
	xs     []exclusion // its exclusions, relative to origin
	// rel is where origin was below the root of the clone it was in: the
	// next level down.
	rel string
}

// viewLevels lists the clones from clone down to the one whose pin is pin,
// the clone first. ok is false when the chain does not lead there, or a
// clone on the way does not know where its origin was.
func (v *Volume) viewLevels(clone, pin uint64) ([]viewLevel, bool, error) {
	var levels []viewLevel
	for c := clone; c != 0 && len(levels) < 1<<12; {
		rec, err := v.cloneRecord(c)
		if errors.Is(err, meta.ErrNotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		xs, err := parseExcludes(rec.Excludes)
		if err != nil {
			return nil, false, err
		}
		levels = append(levels, viewLevel{origin: rec.Origin, xs: xs, rel: rec.OriginRel})
		if rec.Pin == pin {
			return levels, true, nil
		}
		if !rec.OriginRelKnown {
			return nil, false, nil
		}
		n, err := loadInode(versions.AsOf(v.meta, rec.Pin), rec.Origin)
		if err != nil {
			return nil, false, nil
		}
		c = n.Clone
	}
	return nil, false, nil
}

// cloneRecord reads clone c's record, or the last one it had if it is
// gone.
func (v *Volume) cloneRecord(c uint64) (schema.Clone, error) {
	raw, err := v.meta.Get(schema.CloneKey(c))
	if errors.Is(err, meta.ErrNotFound) {
		raw, err = v.meta.Get(schema.GoneKey(c))
	}
	if err != nil {
		return schema.Clone{}, err
	}
	return schema.DecodeClone(raw)
}

// inView maps path p, relative to the origin of the deepest of levels, up
// through the levels and reports whether the first one shows it.
func inView(levels []viewLevel, p string) bool {
	for i := len(levels) - 1; i >= 0; i-- {
		if i < len(levels)-1 {
			var ok bool
			if p, ok = underPath(p, levels[i].rel); !ok {
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
		lower, upper := schema.ParentRange(dir)
		var parent uint64
		var name string
		err := scan(r, lower, upper, func(k, _ []byte) error {
			if parent == 0 {
				var err error
				_, parent, name, err = schema.ParseParentKey(k)
				return err
			}
			return nil
		})
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
