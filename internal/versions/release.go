package versions

import (
	"bytes"
	"errors"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// ReleaseStep frees up to limit retained versions of the pin at version v,
// in batch b. older is the newest remaining pin below v (0 if none): a
// version it still reads (no version of the key lies in [older, v)) moves
// to it, the rest are dropped and ref is told of the chunk references
// they held. done says that none are left; the caller then deletes the
// pin record.
func ReleaseStep(b meta.Batch, v, older uint64, limit int, ref func(schema.Extent, int64)) (done bool, n int, err error) {
	keys, err := indexKeys(b, v, limit)
	if err != nil {
		return false, 0, err
	}
	for _, key := range keys {
		rk := schema.RetainedKey(key, v)
		raw, err := b.Get(rk)
		if err != nil && !errors.Is(err, meta.ErrNotFound) {
			return false, n, err
		}
		if err == nil {
			if err := release(b, key, raw, v, older, ref); err != nil {
				return false, n, err
			}
			if err := b.Delete(rk); err != nil {
				return false, n, err
			}
		}
		if err := b.Delete(schema.RetainIndexKey(v, key)); err != nil {
			return false, n, err
		}
		n++
	}
	return len(keys) < limit, n, nil
}

// release moves or drops one retained version of key at pin v.
func release(b meta.Batch, key, raw []byte, v, older uint64, ref func(schema.Extent, int64)) error {
	rv, err := schema.DecodeRetained(raw)
	if err != nil {
		return err
	}
	if older != 0 {
		between, err := hasVersionIn(b, key, older, v)
		if err != nil {
			return err
		}
		if !between {
			if err := b.Set(schema.RetainedKey(key, older), raw); err != nil {
				return err
			}
			return b.Set(schema.RetainIndexKey(older, key), nil)
		}
	}
	return refExtent(key, rv, ref, -1)
}

// hasVersionIn reports whether key has a retained version at a pin in
// [from, to).
func hasVersionIn(r meta.Reader, key []byte, from, to uint64) (bool, error) {
	it, err := r.NewIter(schema.RetainedKey(key, from), schema.RetainedKey(key, to))
	if err != nil {
		return false, err
	}
	found := it.First()
	return found, it.Close()
}

func indexKeys(r meta.Reader, v uint64, limit int) ([][]byte, error) {
	it, err := r.NewIter(schema.RetainIndexRange(v))
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	for it.First(); it.Valid() && len(keys) < limit; it.Next() {
		k, err := schema.RetainIndexKeyOf(it.Key())
		if err != nil {
			it.Close()
			return nil, err
		}
		keys = append(keys, bytes.Clone(k))
	}
	return keys, it.Close()
}
