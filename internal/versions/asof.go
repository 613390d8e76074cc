package versions

import (
	"bytes"
	"errors"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// AsOf returns a reader of the volume as it stood at pinned version pin:
// versioned records come from their retained versions where a change
// after pin left one, else from the live records. Other records (chunks,
// counters) are read live.
func AsOf(r meta.Reader, pin uint64) meta.Reader { return asOf{r: r, pin: pin} }

type asOf struct {
	r   meta.Reader
	pin uint64
}

// Get implements meta.Reader.
func (a asOf) Get(key []byte) ([]byte, error) {
	if !schema.Versioned(key) {
		return a.r.Get(key)
	}
	v, found, err := retainedAt(a.r, key, a.pin)
	if err != nil || !found {
		return a.r.Get(key)
	}
	if !v.Present {
		return nil, meta.ErrNotFound
	}
	return v.Value, nil
}

// retainedAt finds key's first retained version at or after pin.
func retainedAt(r meta.Reader, key []byte, pin uint64) (schema.Retained, bool, error) {
	prefix := schema.RetainedPrefix(key)
	it, err := r.NewIter(schema.RetainedKey(key, pin), groupEnd(prefix))
	if err != nil {
		return schema.Retained{}, false, err
	}
	defer it.Close()
	if !it.First() {
		return schema.Retained{}, false, nil
	}
	v, err := schema.DecodeRetained(it.Value())
	if err != nil {
		return v, false, err
	}
	return v, true, nil
}

// groupEnd is the first key after every retained version of one key:
// its prefix with the terminating zero byte raised to one.
func groupEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	end[len(end)-1] = 1
	return end
}

// NewIter implements meta.Reader: it merges the live records in [lower,
// upper) with their retained versions.
func (a asOf) NewIter(lower, upper []byte) (meta.Iterator, error) {
	live, err := a.r.NewIter(lower, upper)
	if err != nil {
		return nil, err
	}
	if len(lower) == 0 || !schema.Versioned(append(bytes.Clone(lower), make([]byte, 9)...)) {
		return live, nil // not a versioned range
	}
	ret, err := a.r.NewIter(schema.RetainedBound(lower), schema.RetainedBound(upper))
	if err != nil {
		live.Close()
		return nil, err
	}
	return &asOfIter{r: a.r, pin: a.pin, live: live, ret: ret}, nil
}

// asOfIter walks the union of live keys and keys with retained versions,
// showing each key's value as of pin and skipping keys absent then.
type asOfIter struct {
	r        meta.Reader
	pin      uint64
	live     meta.Iterator
	ret      meta.Iterator // positioned on some version of a key's group
	forward  bool
	valid    bool
	key, val []byte
	err      error
}

var errIter = errors.New("versions: malformed retained key")

// retKey is the live key of the retained version ret is on, or nil.
func (it *asOfIter) retKey() []byte {
	if !it.ret.Valid() {
		return nil
	}
	k, _, err := schema.ParseRetainedKey(it.ret.Key())
	if err != nil {
		it.err = errIter
		return nil
	}
	return k
}

func (it *asOfIter) liveKey() []byte {
	if !it.live.Valid() {
		return nil
	}
	return it.live.Key()
}

// settle picks the next candidate key in the current direction and stops
// on the first one present at the pin.
func (it *asOfIter) settle() bool {
	for it.err == nil {
		// A failed move of either iterator looks like its end: stop
		// rather than take the other one's keys for the whole range.
		if err := it.live.Error(); err != nil {
			it.err = err
			break
		}
		if err := it.ret.Error(); err != nil {
			it.err = err
			break
		}
		lk, rk := it.liveKey(), it.retKey()
		if lk == nil && rk == nil {
			break
		}
		cand := lk
		if cand == nil || (rk != nil && (bytes.Compare(rk, cand) < 0) == it.forward && !bytes.Equal(rk, cand)) {
			cand = rk
		}
		cand = bytes.Clone(cand)
		inLive := lk != nil && bytes.Equal(lk, cand)
		var val []byte
		present := false
		if rk != nil && bytes.Equal(rk, cand) {
			v, found, err := retainedAt(it.r, cand, it.pin)
			if err != nil {
				it.err = err
				break
			}
			if found {
				present, val = v.Present, v.Value
			} else if inLive {
				present, val = true, bytes.Clone(it.live.Value())
			}
		} else {
			present, val = true, bytes.Clone(it.live.Value())
		}
		if present {
			it.key, it.val, it.valid = cand, val, true
			return true
		}
		it.step(cand, inLive, rk != nil && bytes.Equal(rk, cand))
	}
	it.valid = false
	return false
}

// step moves both iterators past key in the current direction.
func (it *asOfIter) step(key []byte, inLive, inRet bool) {
	prefix := schema.RetainedPrefix(key)
	if it.forward {
		if inLive {
			it.live.Next()
		}
		if inRet {
			it.ret.SeekGE(groupEnd(prefix))
		}
		return
	}
	if inLive {
		it.live.Prev()
	}
	if inRet {
		it.ret.SeekLT(prefix)
	}
}

func (it *asOfIter) First() bool {
	it.forward = true
	it.live.First()
	it.ret.First()
	return it.settle()
}

func (it *asOfIter) Last() bool {
	it.forward = false
	it.live.Last()
	it.ret.Last()
	return it.settle()
}

func (it *asOfIter) SeekGE(key []byte) bool {
	it.forward = true
	it.live.SeekGE(key)
	it.ret.SeekGE(schema.RetainedBound(key))
	return it.settle()
}

func (it *asOfIter) SeekLT(key []byte) bool {
	it.forward = false
	it.live.SeekLT(key)
	it.ret.SeekLT(schema.RetainedBound(key))
	return it.settle()
}

func (it *asOfIter) Next() bool {
	if !it.valid {
		return false
	}
	if !it.forward { // turn around: both to just after the current key
		it.forward = true
		it.live.SeekGE(append(bytes.Clone(it.key), 0))
		it.ret.SeekGE(groupEnd(schema.RetainedPrefix(it.key)))
		return it.settle()
	}
	it.step(it.key, bytes.Equal(it.liveKey(), it.key), bytes.Equal(it.retKey(), it.key))
	return it.settle()
}

func (it *asOfIter) Prev() bool {
	if !it.valid {
		return false
	}
	if it.forward {
		it.forward = false
		it.live.SeekLT(it.key)
		it.ret.SeekLT(schema.RetainedPrefix(it.key))
		return it.settle()
	}
	it.step(it.key, bytes.Equal(it.liveKey(), it.key), bytes.Equal(it.retKey(), it.key))
	return it.settle()
}

func (it *asOfIter) Valid() bool   { return it.valid }
func (it *asOfIter) Key() []byte   { return it.key }
func (it *asOfIter) Value() []byte { return it.val }

// Error is the failure that stopped the walk: a malformed retained key, a
// failed read of a retained version, or either iterator's own.
func (it *asOfIter) Error() error { return it.err }

func (it *asOfIter) Close() error {
	err := it.live.Close()
	if rerr := it.ret.Close(); err == nil {
		err = rerr
	}
	if err == nil {
		err = it.err
	}
	return err
}
