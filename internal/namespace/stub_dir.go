package namespace

import (
	"errors"
	"strings"
	"syscall"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/exclude"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// copyEntries gives stub directory ino (record n) its source's entries,
// minus the excluded ones, each naming a new stub. A file with several
// names in the source gets one inode in the clone, found again through
// the clone's link map. It returns how many entries are directories and
// how many stubs it made.
func (v *FS) copyEntries(tx *content.Tx, ino uint64, n *schema.Inode, src source) (subdirs, stubs int, err error) {
	err = eachEntry(src.r, src.ino, func(name string, d schema.Dirent) error {
		dir := d.Type == syscall.S_IFDIR
		if out, err := v.excludedEntry(src.excl, name, dir); err != nil || out {
			return err
		}
		local, fresh, err := v.stubFor(tx, n, src, d.Ino, name)
		if err != nil {
			return err
		}
		if dir {
			subdirs++
		}
		if fresh {
			stubs++
		}
		tx.Relinked(local) // a hard link in the clone may gain a name
		return setName(tx.Batch(), ino, name, schema.Dirent{Ino: local, Type: d.Type})
	})
	return subdirs, stubs, err
}

// stubFor returns the clone's inode for source child base (named name in
// the directory being materialized), making a stub unless the link map
// already has one.
func (v *FS) stubFor(tx *content.Tx, parent *schema.Inode, src source, base uint64, name string) (uint64, bool, error) {
	b := tx.Batch()
	cn, err := loadInode(src.r, base)
	if err != nil {
		return 0, false, err
	}
	near := source{r: src.r, pin: src.pin, ino: base, n: cn}
	lk, err := v.linkFor(b, parent, near)
	if err != nil {
		return 0, false, err
	}
	linked, key := lk.linked, lk.key
	if linked {
		local, ok, err := addName(tx, parent.Clone, key)
		if err != nil || ok {
			return local, false, err
		}
	}
	local, err := allocIno(tx)
	if err != nil {
		return 0, false, err
	}
	stub := cn
	if !isDir(cn.Mode) && !linked {
		stub.Nlink = 1 // its names here are not linked (see linkFor)
	}
	stub.Clone, stub.Origin, stub.Stub, stub.Excl = parent.Clone, schema.Origin{Pin: src.pin, Base: base}, true, nil
	if isDir(cn.Mode) {
		for _, x := range src.excl {
			stub.Excl = append(stub.Excl, schema.ExclCtx{Clone: x.Clone, Path: joinRel(x.Path, name)})
		}
	}
	if linked {
		// Its link count counts every name it has in the clone, also
		// those in directories not materialized yet: they name this
		// inode (through the link map) once they are.
		if stub.Nlink, err = lk.count(v, parent.Clone); err != nil {
			return 0, false, err
		}
		if err := setMap(b, linkMap, parent.Clone, key.pin, key.ino, local); err != nil {
			return 0, false, err
		}
	}
	if err := saveInode(tx, local, &stub); err != nil {
		return 0, false, err
	}
	if isDir(cn.Mode) {
		if err := setMap(b, dirMap, parent.Clone, src.pin, base, local); err != nil {
			return 0, false, err
		}
	}
	tx.AddInodes(1)
	return local, true, nil
}

// excludedPath reports whether xs exclude rel (a directory if dir) or a
// directory above it.
func excludedPath(xs exclude.Set, rel string, dir bool) bool {
	parts := splitRel(rel)
	for i := range parts {
		if xs.Match(strings.Join(parts[:i+1], "/"), i < len(parts)-1 || dir) {
			return true
		}
	}
	return false
}

// addName returns the clone's inode that the link map names, if it still
// exists; its link count already counts the name being made.
func addName(tx *content.Tx, clone uint64, key linkKey) (uint64, bool, error) {
	b := tx.Batch()
	local, found, err := readMap(b, linkMap, clone, key.pin, key.ino)
	if err != nil || !found {
		return 0, false, err
	}
	n, err := loadInode(b, local)
	if errors.Is(err, syscall.ENOENT) || (err == nil && n.Nlink == 0) {
		return 0, false, nil // gone, or unlinked and only open
	}
	if err != nil {
		return 0, false, err
	}
	return local, true, nil
}

// excludedEntry applies every exclusion context to one entry.
func (v *FS) excludedEntry(excl []schema.ExclCtx, name string, dir bool) (bool, error) {
	for _, x := range excl {
		xs, err := v.cloneExcludes(x.Clone)
		if err != nil {
			return false, err
		}
		if xs.Match(joinRel(x.Path, name), dir) {
			return true, nil
		}
	}
	return false, nil
}

// cloneExcludes returns clone c's parsed exclusions, cached.
func (v *FS) cloneExcludes(c uint64) (exclude.Set, error) {
	if xs, ok := v.excludes.Load(c); ok {
		return xs.(exclude.Set), nil
	}
	rec, err := loadCloneOrGone(v.meta, c) // also of a clone gone since
	if errors.Is(err, meta.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	xs, err := exclude.Parse(rec.Excludes)
	if err != nil {
		return nil, err
	}
	v.excludes.Store(c, xs)
	return xs, nil
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
