package pgstore

import (
	"errors"
	"slices"

	"github.com/doppelfs/doppel/internal/meta"
)

var errClosed = errors.New("pgstore: batch used after Close or Commit")

// batch is a meta.Batch: writes go to an overlay in memory and cost no
// round trip until Commit; reads merge the overlay over the store's
// latest committed state, as Pebble's indexed batches do.
type batch struct {
	s    *Store
	ov   *overlay
	done bool // committed or closed
	// replays is the store's count of commits sent again after a crash
	// when the batch began (replay.go).
	replays int64
}

func (s *Store) NewBatch() meta.Batch {
	b := s.newBatch()
	return &b
}

func (s *Store) newBatch() batch {
	return batch{s: s, ov: newOverlay(), replays: s.guard.replays.Load()}
}

func (b *batch) Get(key []byte) ([]byte, error) {
	if b.done {
		return nil, errClosed
	}
	v, found, deleted := b.ov.get(key)
	switch {
	case found:
		return append([]byte{}, v...), nil
	case deleted:
		return nil, meta.ErrNotFound
	}
	return b.s.Get(key)
}

// GetMany implements meta.MultiGetter: the batch's own writes, and the
// other keys' committed values read with one statement (a transaction's
// scattered chunk records would otherwise cost a round trip each).
func (b *batch) GetMany(keys [][]byte) ([][]byte, error) {
	if b.done {
		return nil, errClosed
	}
	out := make([][]byte, len(keys))
	var rest [][]byte
	var at []int
	for i, k := range keys {
		v, found, deleted := b.ov.get(k)
		switch {
		case found:
			out[i] = append([]byte{}, v...)
		case !deleted:
			rest, at = append(rest, k), append(at, i)
		}
	}
	if len(rest) == 0 {
		return out, nil
	}
	got, err := b.s.GetMany(rest)
	if err != nil {
		return nil, err
	}
	for j, v := range got {
		out[at[j]] = v
	}
	return out, nil
}

func (b *batch) NewIter(lower, upper []byte) (meta.Iterator, error) {
	if b.done {
		return nil, errClosed
	}
	m := &merged{store: newPager(&b.s.r, lower, upper), ov: b.ov,
		lower: append([]byte{}, lower...), upper: slices.Clone(upper)}
	return newIter(m, lower, upper), nil
}

func (b *batch) Set(key, value []byte) error {
	if b.done {
		return errClosed
	}
	b.ov.set(key, value)
	return nil
}

func (b *batch) Delete(key []byte) error {
	if b.done {
		return errClosed
	}
	b.ov.del(key)
	return nil
}

// DeleteRange deletes every key in [lower, upper) (upper nil: to the end)
// with one statement at commit; the batch's own reads stop seeing them at
// once.
func (b *batch) DeleteRange(lower, upper []byte) error {
	if b.done {
		return errClosed
	}
	b.ov.delRange(lower, upper)
	return nil
}

// Close discards the batch unless it was committed; closing twice is
// harmless.
func (b *batch) Close() error {
	b.done, b.ov = true, newOverlay()
	return nil
}
