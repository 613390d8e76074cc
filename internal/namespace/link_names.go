package namespace

import (
	"errors"
	"syscall"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/versions"
)

// A hard-linked file's link count in a clone counts every name the clone
// shows of it, also names still pending in stub directories (they name the
// same inode through the link map once materialized). Through clones of
// clones each name is followed up level by level, by inode: a name below
// directory d of a level is shown by the clone above if the clone's
// directory map has, for d or the nearest directory above it, a directory
// of the clone that is still a stub (and does not exclude the name). A
// materialized one shows the name only as an entry of its own, which the
// clone's inode for the file has as a back-reference.

// errNotExact says the exact count cannot be made: a clone on the way has
// no directory map (made before there was one). The caller counts the old
// way, which is never too low.
var errNotExact = errors.New("namespace: link count needs a directory map")

// linkKey is where a hard-linked file's contents are (inode ino as of
// version pin), normalized (see normalize): what a clone's link map is
// keyed by.
type linkKey struct{ pin, ino uint64 }

// nameRep is a name as one level shows it: path rel below directory dir,
// read as of version at. A name pending in a stub directory has one per
// level, the shallowest first.
type nameRep struct {
	at  uint64
	dir uint64
	rel string
}

type viewName []nameRep

// linkLevel is one clone of a chain from the clone being counted down to
// the volume outside clones.
type linkLevel struct {
	clone uint64 // 0: outside any clone
	at    uint64 // the version its records are read as of (0: now)
	pin   uint64 // its own pin, as of which the next level is read
}

// linkCounter counts names through the chain below one clone.
type linkCounter struct {
	v      *FS
	top    meta.Reader // the clone's records now: the transaction's batch
	levels []linkLevel
	done   bool // levels holds every level there is to read
}

func (v *FS) newLinkCounter(clone uint64, top meta.Reader) *linkCounter {
	return &linkCounter{v: v, top: top, levels: []linkLevel{{clone: clone}}}
}

func (lc *linkCounter) reader(at uint64) meta.Reader {
	if at == 0 {
		return lc.top
	}
	return versions.AsOf(lc.v.meta, at)
}

// level returns level i, reading clone records down to it. ok is false
// below the chain: under the volume outside clones, or a clone whose pin
// is gone (nothing of it read through the pin since).
func (lc *linkCounter) level(i int) (linkLevel, bool, error) {
	for len(lc.levels) <= i && !lc.done {
		last := &lc.levels[len(lc.levels)-1]
		if last.clone == 0 || len(lc.levels) > 1<<12 {
			lc.done = true
			break
		}
		rec, err := loadCloneOrGone(lc.v.meta, last.clone)
		if errors.Is(err, meta.ErrNotFound) {
			return linkLevel{}, false, errNotExact
		}
		if err != nil {
			return linkLevel{}, false, err
		}
		below, found, err := readMap(lc.reader(last.at), dirMap, last.clone, 0, 0)
		if err != nil {
			return linkLevel{}, false, err
		}
		if !found {
			return linkLevel{}, false, errNotExact
		}
		last.pin = rec.Pin
		if _, err := loadPin(lc.v.meta, rec.Pin); errors.Is(err, meta.ErrNotFound) {
			lc.done = true
			break
		} else if err != nil {
			return linkLevel{}, false, err
		}
		lc.levels = append(lc.levels, linkLevel{clone: below, at: rec.Pin})
	}
	if i < len(lc.levels) {
		return lc.levels[i], true, nil
	}
	return linkLevel{}, false, nil
}

// mapped reads what a link or directory map of level l names, if that
// inode existed as l is read.
func (lc *linkCounter) mapped(l linkLevel, m cloneMap, pin, src uint64) (uint64, schema.Inode, bool, error) {
	r := lc.reader(l.at)
	ino, found, err := readMap(r, m, l.clone, pin, src)
	if err != nil || !found {
		return 0, schema.Inode{}, false, err
	}
	if l.at != 0 {
		// As of a pin, inodes born since read as they are now.
		p, err := loadPin(lc.v.meta, l.at)
		if errors.Is(err, meta.ErrNotFound) {
			return 0, schema.Inode{}, false, errNotExact // released meanwhile
		}
		if err != nil {
			return 0, schema.Inode{}, false, err
		}
		if ino >= p.NextIno {
			return 0, schema.Inode{}, false, nil
		}
	}
	n, err := loadInode(r, ino)
	if errors.Is(err, syscall.ENOENT) {
		return 0, schema.Inode{}, false, nil
	}
	return ino, n, err == nil, err
}

// normalize maps k, found at a level below level from, up to the inode the
// levels from there to k's own level have for it: a clone in between that
// materialized the file holds it under its own inode, and every name of it
// there, pending or not, names that inode.
func (lc *linkCounter) normalize(from int, k linkKey) (linkKey, error) {
	j := -1
	for i := from; j < 0; i++ {
		l, ok, err := lc.level(i)
		if errors.Is(err, syscall.ENOENT) {
			err = errNotExact
		}
		if err != nil || !ok {
			return k, err
		}
		if l.at == k.pin {
			j = i
		}
	}
	for i := j - 1; i >= from; i-- {
		l := lc.levels[i]
		y, n, ok, err := lc.mapped(l, linkMap, k.pin, k.ino)
		if err != nil {
			return k, err
		}
		if ok && n.Nlink > 0 && !n.Stub {
			k = linkKey{l.at, y}
		}
	}
	return k, nil
}

// count is the number of names file k has in the clone of level 0.
func (lc *linkCounter) count(k linkKey) (uint32, error) {
	names, err := lc.namesAt(0, k)
	if errors.Is(err, syscall.ENOENT) {
		err = errNotExact // a record the chain needs is gone
	}
	return uint32(len(names)), err
}

// namesAt lists the names level i shows of file k (normalized for the
// levels below i).
func (lc *linkCounter) namesAt(i int, k linkKey) ([]viewName, error) {
	l, ok, err := lc.level(i)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errNotExact
	}
	var y uint64
	key := k
	if k.pin == l.at {
		y = k.ino
		n, err := loadInode(lc.reader(l.at), y)
		if err != nil {
			return nil, err
		}
		if n.Origin == (schema.Origin{}) {
			return lc.realNames(l.at, y) // made there: no names pending
		}
		if n.Clone != l.clone {
			return nil, errNotExact // moved in from another clone
		}
		if _, below, err := lc.level(i + 1); err != nil || !below {
			if err != nil {
				return nil, err
			}
			return lc.realNames(l.at, y)
		}
		// Its names pending in stubs are the origin's, under the key
		// the clone's link map has for them.
		src, err := lc.v.sourceOf(&schema.Inode{Origin: n.Origin})
		if err != nil {
			return nil, err
		}
		if key, err = lc.normalize(i+1, linkKey{src.pin, src.ino}); err != nil {
			return nil, err
		}
		if m, _, ok, err := lc.mapped(l, linkMap, key.pin, key.ino); err != nil {
			return nil, err
		} else if !ok || m != y {
			return lc.realNames(l.at, y) // not linked when met: one name
		}
	} else {
		if l.clone == 0 {
			return nil, errNotExact
		}
		m, n, ok, err := lc.mapped(l, linkMap, k.pin, k.ino)
		if err != nil {
			return nil, err
		}
		if ok && n.Nlink > 0 {
			y = m
		}
	}
	var names []viewName
	if y != 0 {
		if names, err = lc.realNames(l.at, y); err != nil {
			return nil, err
		}
	}
	if _, below, err := lc.level(i + 1); err != nil || !below {
		return names, err
	}
	deeper, err := lc.namesAt(i+1, key)
	if err != nil {
		return nil, err
	}
	up, err := lc.mapUp(l, deeper)
	return append(names, up...), err
}
