package content

import (
	"slices"
	"sort"

	"github.com/google/btree"

	"github.com/doppelfs/doppel/internal/schema"
)

// pagedExtents is one file's extent records in memory, by offset: pages
// of mapPageBytes of the file, each a sorted slice of the records that
// start in it, found by index in a hash map, in order through a small
// B-tree of the pages. A B-tree of
// the records themselves was tried first: a random read's lookup among a
// million 80-byte records took about a tenth of the server's CPU per
// read, nearly all of it cache misses in the binary searches of four
// levels of wide nodes. Here a read finds its page in one hash lookup,
// and in a page of 4 KiB blocks a block's record is where its offset says
// (the search starts there).
type pagedExtents struct {
	byIdx map[int64]*mapPage
	pages *btree.BTreeG[pageRef] // the same pages, in order
	n     int                    // records
}

// mapPageShift: 1 MiB of the file per page, 256 blocks of 4 KiB.
const mapPageShift = 20

type pageRef struct {
	idx int64 // the page covers [idx<<mapPageShift, (idx+1)<<mapPageShift)
	p   *mapPage
}

type mapPage struct {
	items []mapItem // by offset
}

func pageLess(a, b pageRef) bool { return a.idx < b.idx }

func newPagedExtents() *pagedExtents {
	return &pagedExtents{byIdx: map[int64]*mapPage{}, pages: btree.NewG(16, pageLess)}
}

func (t *pagedExtents) len() int { return t.n }

// page returns the page of index idx, or nil.
func (t *pagedExtents) page(idx int64) *mapPage { return t.byIdx[idx] }

// search returns the number of items of p at or before off: the one
// before that index, if any, is the last starting at or before off.
func (p *mapPage) search(off int64) int {
	items := p.items
	// A page of 4 KiB blocks holds block k at index k.
	if g := int(off&(1<<mapPageShift-1)) >> 12; g < len(items) && items[g].off == off {
		return g + 1
	}
	return sort.Search(len(items), func(i int) bool { return items[i].off > off })
}

// set sets the record at off to x and returns the change in the count
// of records.
func (t *pagedExtents) set(off int64, x schema.Extent) int {
	idx := off >> mapPageShift
	p := t.page(idx)
	if p == nil {
		p = &mapPage{}
		t.byIdx[idx] = p
		t.pages.ReplaceOrInsert(pageRef{idx: idx, p: p})
	}
	i := p.search(off)
	if i > 0 && p.items[i-1].off == off {
		p.items[i-1].x = x
		return 0
	}
	p.items = append(p.items, mapItem{})
	copy(p.items[i+1:], p.items[i:])
	p.items[i] = mapItem{off: off, x: x}
	t.n++
	return 1
}

// del deletes the record at off, if there is one, and returns the change
// in the count of records.
func (t *pagedExtents) del(off int64) int {
	idx := off >> mapPageShift
	p := t.page(idx)
	if p == nil {
		return 0
	}
	i := p.search(off)
	if i == 0 || p.items[i-1].off != off {
		return 0
	}
	p.items = append(p.items[:i-1], p.items[i:]...)
	if len(p.items) == 0 {
		delete(t.byIdx, idx)
		t.pages.Delete(pageRef{idx: idx})
	}
	t.n--
	return -1
}

// each calls fn, until it returns false, for every record whose extent
// overlaps [start, end), in file order.
func (t *pagedExtents) each(start, end int64, fn func(Piece) bool) {
	if end <= start {
		return
	}
	idx := start >> mapPageShift
	// The extent covering start, if any, is the last one starting at or
	// before it: in start's page, or the last of the nearest page before.
	first := 0 // the first item of start's page after start
	p := t.page(idx)
	var before *mapItem
	if p != nil {
		first = p.search(start)
		if first > 0 {
			before = &p.items[first-1]
		}
	}
	if before == nil {
		t.pages.DescendLessOrEqual(pageRef{idx: idx - 1}, func(r pageRef) bool {
			before = &r.p.items[len(r.p.items)-1]
			return false
		})
	}
	if before != nil {
		if q := (Piece{Off: before.off, Extent: before.x}); q.End() > start && !fn(q) {
			return
		}
	}
	if p != nil {
		for _, it := range p.items[first:] {
			if it.off >= end || !fn(Piece{Off: it.off, Extent: it.x}) {
				return
			}
		}
	}
	if (idx+1)<<mapPageShift >= end {
		return
	}
	t.pages.AscendGreaterOrEqual(pageRef{idx: idx + 1}, func(r pageRef) bool {
		for _, it := range r.p.items {
			if it.off >= end || !fn(Piece{Off: it.off, Extent: it.x}) {
				return false
			}
		}
		return true
	})
}

// loader fills an empty pagedExtents with records in offset order, each
// page's slice made at its final size: grown by appends, the slices of a
// million records left as much garbage again as they hold.
type loader struct {
	t   *pagedExtents
	idx int64
	buf []mapItem // the records of page idx so far
}

func (l *loader) add(off int64, x schema.Extent) {
	if idx := off >> mapPageShift; idx != l.idx || len(l.buf) == 0 {
		l.flush()
		l.idx = idx
	}
	l.buf = append(l.buf, mapItem{off: off, x: x})
}

// flush puts the page being filled into the tree.
func (l *loader) flush() {
	if len(l.buf) == 0 {
		return
	}
	p := &mapPage{items: slices.Clone(l.buf)}
	l.t.byIdx[l.idx] = p
	l.t.pages.ReplaceOrInsert(pageRef{idx: l.idx, p: p})
	l.t.n += len(l.buf)
	l.buf = l.buf[:0]
}

// all returns every record, in order (for tests).
func (t *pagedExtents) all() []mapItem {
	var out []mapItem
	t.pages.Ascend(func(r pageRef) bool {
		out = append(out, r.p.items...)
		return true
	})
	return out
}
