package storetest

import "github.com/doppelfs/doppel/internal/meta"

// FailingReader is r whose iterators fail after moves successful moves
// each: the failing move and every later one return false, Error and
// Close return err. It stands for a store a network away that stops
// answering in the middle of a scan, so that callers' handling of
// Iterator.Error can be tested on any store.
func FailingReader(r meta.Reader, moves int, err error) meta.Reader {
	return failingReader{r, moves, err}
}

type failingReader struct {
	meta.Reader
	moves int
	err   error
}

func (f failingReader) NewIter(lower, upper []byte) (meta.Iterator, error) {
	it, err := f.Reader.NewIter(lower, upper)
	if err != nil {
		return nil, err
	}
	return &failingIter{Iterator: it, left: f.moves, fail: f.err}, nil
}

type failingIter struct {
	meta.Iterator
	left int
	fail error
	err  error
}

// step makes one move of the iterator, or fails it.
func (it *failingIter) step(move func() bool) bool {
	if it.err != nil {
		return false
	}
	if it.left == 0 {
		it.err = it.fail
		return false
	}
	it.left--
	return move()
}

func (it *failingIter) First() bool { return it.step(it.Iterator.First) }
func (it *failingIter) Last() bool  { return it.step(it.Iterator.Last) }
func (it *failingIter) Next() bool  { return it.step(it.Iterator.Next) }
func (it *failingIter) Prev() bool  { return it.step(it.Iterator.Prev) }
func (it *failingIter) SeekGE(k []byte) bool {
	return it.step(func() bool { return it.Iterator.SeekGE(k) })
}
func (it *failingIter) SeekLT(k []byte) bool {
	return it.step(func() bool { return it.Iterator.SeekLT(k) })
}
func (it *failingIter) Valid() bool { return it.err == nil && it.Iterator.Valid() }

func (it *failingIter) Error() error {
	if it.err != nil {
		return it.err
	}
	return it.Iterator.Error()
}

func (it *failingIter) Close() error {
	err := it.Iterator.Close()
	if it.err != nil {
		return it.err
	}
	return err
}
