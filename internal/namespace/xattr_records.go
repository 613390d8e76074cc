package namespace

import (
	"errors"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// The extended attribute records (schema.XattrKey), one per attribute.
// Code outside this file reads and writes them through these functions.

// readXattr reads attribute name of ino as r shows it; found is false if
// it has none of that name.
func readXattr(r meta.Reader, ino uint64, name string) (val []byte, found bool, err error) {
	val, err = r.Get(schema.XattrKey(ino, name))
	if errors.Is(err, meta.ErrNotFound) {
		return nil, false, nil
	}
	return val, err == nil, err
}

// setXattr sets attribute name of ino to a copy of val.
func setXattr(b meta.Batch, ino uint64, name string, val []byte) error {
	return b.Set(schema.XattrKey(ino, name), append([]byte{}, val...))
}

// deleteXattr deletes attribute name of ino, if it has one.
func deleteXattr(b meta.Batch, ino uint64, name string) error {
	return b.Delete(schema.XattrKey(ino, name))
}

// deleteXattrs deletes every attribute of ino.
func deleteXattrs(b meta.Batch, ino uint64) error {
	return deleteRange(b, schema.XattrRange, ino)
}

// eachXattr calls fn with every attribute of ino as r shows it, in name
// order.
func eachXattr(r meta.Reader, ino uint64, fn func(name string, val []byte) error) error {
	lower, upper := schema.XattrRange(ino)
	return scan(r, lower, upper, func(k, val []byte) error {
		name, err := schema.XattrName(k)
		if err != nil {
			return err
		}
		return fn(name, val)
	})
}
