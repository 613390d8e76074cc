package meta

import "slices"

// DeleteEach deletes, in b, every key of [lower, upper) that b sees (the
// store's committed keys and b's own), one deletion per key: for ranges
// small enough to list, where a range deletion would be logged and seen
// by other hosts as a range (docs/SHARED.md, 9.2).
func DeleteEach(b Batch, lower, upper []byte) error {
	it, err := b.NewIter(lower, upper)
	if err != nil {
		return err
	}
	var keys [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, slices.Clone(it.Key()))
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
