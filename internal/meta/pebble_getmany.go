package meta

import (
	"bytes"
	"slices"

	"github.com/cockroachdb/pebble"
)

// wholeKeys is Pebble's default comparer with every key its own prefix,
// which lets iterators seek by prefix and so consult bloom filters. The
// name, and with it the on-disk order, stays the default's; tables
// written without a Split already filtered on whole keys.
var wholeKeys = func() *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Split = func(a []byte) int { return len(a) }
	return &c
}()

// GetMany implements MultiGetter: one iterator seeks to the keys in
// order, by prefix, consulting every level's bloom filters. Get skips the
// bottom level's (Pebble loads them only when asked), where most records
// of a grown volume live: each lookup of a new chunk, which misses, then
// read an index and a data block there, 20 µs a lookup while a block
// device's overwrite churned the tables (docs/BENCHMARKS.md, issue 15).
func (p *Pebble) GetMany(keys [][]byte) ([][]byte, error) {
	return getMany(p.db, keys, true)
}

// GetMany implements MultiGetter for a batch: the same prefix seeks,
// through the batch, so that its own writes are seen. A transaction reads
// the records of the chunks its overwrites drop this way; with plain
// seeks, which cannot consult bloom filters, each such read searched
// every level's index and data blocks for a key that lives in one. These
// keys exist, mostly in the bottom level, whose filter would only say
// "maybe" there: it is not consulted.
func (b *pebbleBatch) GetMany(keys [][]byte) ([][]byte, error) {
	return getMany(b.b, keys, false)
}

// getMany reads keys through one iterator of r seeking by prefix, in key
// order; bottomFilters consults the bottom level's bloom filters too.
func getMany(r pebble.Reader, keys [][]byte, bottomFilters bool) ([][]byte, error) {
	vals := make([][]byte, len(keys))
	if len(keys) == 0 {
		return vals, nil
	}
	it, err := r.NewIter(&pebble.IterOptions{UseL6Filters: bottomFilters})
	if err != nil {
		return nil, err
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	for _, i := range order {
		if it.SeekPrefixGE(keys[i]) && bytes.Equal(it.Key(), keys[i]) {
			vals[i] = append([]byte{}, it.Value()...)
		}
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	return vals, nil
}
