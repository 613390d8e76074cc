package pgstore

import "slices"

// iter is a meta.Iterator over a source: it keeps only its position, and
// each move asks the source for the neighbour of the current key.
type iter struct {
	src   source
	lower []byte
	cur   kv
	valid bool
	// edge says where an invalid iterator stands: -1 before the first
	// key (Next goes to First), +1 past the last (Prev goes to Last).
	edge int
	err  error // the first failure; the iterator stays invalid after it
}

func newIter(src source, lower, _ []byte) *iter {
	return &iter{src: src, lower: append([]byte{}, lower...)}
}

func (it *iter) set(e kv, ok bool, err error, edge int) bool {
	if err != nil && it.err == nil {
		it.err = err
	}
	it.cur, it.valid = e, ok && it.err == nil
	if !it.valid {
		it.edge = edge
	}
	return it.valid
}

func (it *iter) First() bool {
	if it.err != nil {
		return false
	}
	e, ok, err := it.src.ge(it.lower)
	return it.set(e, ok, err, -1)
}

func (it *iter) Last() bool {
	if it.err != nil {
		return false
	}
	e, ok, err := it.src.lt(nil)
	return it.set(e, ok, err, +1)
}

func (it *iter) SeekGE(key []byte) bool {
	if it.err != nil {
		return false
	}
	e, ok, err := it.src.ge(key)
	return it.set(e, ok, err, +1)
}

func (it *iter) SeekLT(key []byte) bool {
	if it.err != nil {
		return false
	}
	if key == nil {
		key = []byte{} // nil would mean past the end
	}
	e, ok, err := it.src.lt(key)
	return it.set(e, ok, err, -1)
}

func (it *iter) Next() bool {
	if it.err != nil {
		return false
	}
	if !it.valid {
		return it.edge < 0 && it.First()
	}
	e, ok, err := it.src.ge(append(slices.Clone(it.cur.k), 0))
	return it.set(e, ok, err, +1)
}

func (it *iter) Prev() bool {
	if it.err != nil {
		return false
	}
	if !it.valid {
		return it.edge > 0 && it.Last()
	}
	e, ok, err := it.src.lt(it.cur.k)
	return it.set(e, ok, err, -1)
}

func (it *iter) Valid() bool   { return it.valid }
func (it *iter) Key() []byte   { return it.cur.k }
func (it *iter) Value() []byte { return it.cur.v }

// Error is the first failure of a move; the iterator stays invalid after
// it.
func (it *iter) Error() error { return it.err }

// Close returns the first error a move met: a move that failed looked
// like the end of the range.
func (it *iter) Close() error {
	it.valid = false
	return it.err
}
