package pgstore

import (
	"slices"

	"github.com/google/btree"
)

// overlay holds a batch's writes: the last write of each key (a value or a
// deletion) in key order, and the ranges deleted whole. A range deletion
// drops the point writes inside it, so every point write left is newer
// than every range that covers it, and a commit applies ranges first.
type overlay struct {
	points *btree.BTreeG[point]
	ranges []span
}

type point struct {
	k   string
	v   []byte
	del bool
}

// span is [lo, hi); hi nil is no upper bound.
type span struct{ lo, hi []byte }

// holds reports whether key k is in [lo, hi) (hi nil: no bound).
func (r span) holds(k string) bool {
	return k >= string(r.lo) && (r.hi == nil || k < string(r.hi))
}

func newOverlay() *overlay {
	return &overlay{points: btree.NewG(16, func(a, b point) bool { return a.k < b.k })}
}

func (o *overlay) set(k, v []byte) {
	o.points.ReplaceOrInsert(point{k: string(k), v: append([]byte{}, v...)})
}

func (o *overlay) del(k []byte) { o.points.ReplaceOrInsert(point{k: string(k), del: true}) }

func (o *overlay) delRange(lo, hi []byte) {
	var inside []point
	o.points.AscendGreaterOrEqual(point{k: string(lo)}, func(p point) bool {
		if hi != nil && p.k >= string(hi) {
			return false
		}
		inside = append(inside, p)
		return true
	})
	for _, p := range inside {
		o.points.Delete(p)
	}
	o.ranges = append(o.ranges, span{append([]byte{}, lo...), slices.Clone(hi)})
}

func (o *overlay) empty() bool { return o.points.Len() == 0 && len(o.ranges) == 0 }

// get says what the batch holds for k: a value (found), a deletion
// (deleted), or nothing (the store decides).
func (o *overlay) get(k []byte) (v []byte, found, deleted bool) {
	if p, ok := o.points.Get(point{k: string(k)}); ok {
		return p.v, !p.del, p.del
	}
	_, inRange := o.covering(k)
	return nil, false, inRange
}

// covering returns a deleted range that holds k.
func (o *overlay) covering(k []byte) (span, bool) {
	for _, r := range o.ranges {
		if r.holds(string(k)) {
			return r, true
		}
	}
	return span{}, false
}

// hasPoint says whether the batch wrote k itself (a value or a deletion).
func (o *overlay) hasPoint(k []byte) bool {
	_, ok := o.points.Get(point{k: string(k)})
	return ok
}

// ge returns the first key >= k that the batch set (not deleted), below
// upper (nil: no bound).
func (o *overlay) ge(k, upper []byte) (kv, bool) {
	var out kv
	var found bool
	o.points.AscendGreaterOrEqual(point{k: string(k)}, func(p point) bool {
		if upper != nil && p.k >= string(upper) {
			return false
		}
		if p.del {
			return true
		}
		out, found = kv{[]byte(p.k), p.v}, true
		return false
	})
	return out, found
}

// lt returns the last key < k (nil: any) that the batch set, at or above
// lower.
func (o *overlay) lt(k, lower []byte) (kv, bool) {
	var out kv
	var found bool
	visit := func(p point) bool {
		if p.k < string(lower) {
			return false
		}
		if p.del {
			return true
		}
		out, found = kv{[]byte(p.k), p.v}, true
		return false
	}
	if k == nil {
		o.points.Descend(visit)
	} else {
		o.points.DescendLessOrEqual(point{k: string(k)}, func(p point) bool {
			return p.k == string(k) || visit(p) // less than k only
		})
	}
	return out, found
}

// writes returns the batch's point writes in key order: the keys to
// delete, and the keys and values to set.
func (o *overlay) writes() (dels, keys, vals [][]byte) {
	o.points.Ascend(func(p point) bool {
		if p.del {
			dels = append(dels, []byte(p.k))
		} else {
			keys = append(keys, []byte(p.k))
			vals = append(vals, p.v)
		}
		return true
	})
	return dels, keys, vals
}
