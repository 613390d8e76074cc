package namespace

import (
	"errors"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// A clone's two maps, kept while it lives (and while it is gone but a
// later pin reads through it): the link map (schema.LinkMapKey) names the
// clone's inode for a hard-linked source file, so that its names in
// directories materialized later find the same inode; the directory map
// (schema.DirMapKey) names the clone's directory for each source
// directory it copied, and at (0, 0) the clone whose tree held the
// clone's source. Code outside this file reads and writes them through
// these functions.

type cloneMap int

const (
	linkMap cloneMap = iota
	dirMap
)

func (m cloneMap) key(clone, pin, ino uint64) []byte {
	if m == dirMap {
		return schema.DirMapKey(clone, pin, ino)
	}
	return schema.LinkMapKey(clone, pin, ino)
}

// readMap reads what clone's map m names for source inode ino as of pin;
// found is false if it names nothing.
func readMap(r meta.Reader, m cloneMap, clone, pin, ino uint64) (local uint64, found bool, err error) {
	raw, err := r.Get(m.key(clone, pin, ino))
	if errors.Is(err, meta.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	local, err = schema.ParseU64(raw)
	return local, err == nil, err
}

// setMap makes clone's map m name local for source inode ino as of pin.
func setMap(b meta.Batch, m cloneMap, clone, pin, ino, local uint64) error {
	return b.Set(m.key(clone, pin, ino), schema.U64(local))
}

// linkMapped lists the inodes clone's link map names.
func linkMapped(r meta.Reader, clone uint64) ([]uint64, error) {
	lower, upper := schema.LinkMapRange(clone)
	var inos []uint64
	err := scan(r, lower, upper, func(_, val []byte) error {
		ino, err := schema.ParseU64(val)
		inos = append(inos, ino)
		return err
	})
	return inos, err
}

// deleteMaps deletes clone c's link and directory maps.
func deleteMaps(b meta.Batch, c uint64) error {
	if err := deleteRange(b, schema.LinkMapRange, c); err != nil {
		return err
	}
	return deleteRange(b, schema.DirMapRange, c)
}
