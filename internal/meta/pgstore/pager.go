package pgstore

import (
	"bytes"
	"slices"
	"sort"
)

// source is an ordered set of entries bounded to one key range, asked for
// neighbours of a key. Both the store's pages and a batch's merged view
// are sources, and iter turns any source into a meta.Iterator.
type source interface {
	// ge returns the first entry whose key is >= k.
	ge(k []byte) (kv, bool, error)
	// lt returns the last entry whose key is < k; k nil means past the end.
	lt(k []byte) (kv, bool, error)
}

// First and largest page of an iterator's queries: a short lookup (SeekLT
// then Next) costs one small query, a long scan doubles its pages.
const (
	firstPage = 16
	maxPage   = 1024
)

// pager reads [lower, upper) of a view of the store a page at a time. It
// keeps the last page (win) and the key interval [lo, hi) it covers
// completely: every key of the view in it is in win. loStart says that lo
// is the range's lower bound, hiEnd that the interval runs to its end.
type pager struct {
	r                  *reader
	lower, upper       []byte // lower is never nil; upper nil is no bound
	win                []kv
	lo, hi             []byte
	ok, loStart, hiEnd bool
	page               int
}

func newPager(r *reader, lower, upper []byte) *pager {
	return &pager{r: r, lower: append([]byte{}, lower...), upper: slices.Clone(upper), page: firstPage}
}

func (p *pager) pageSize() int {
	n := p.page
	p.page = min(2*p.page, maxPage)
	return n
}

func (p *pager) ge(k []byte) (kv, bool, error) {
	if bytes.Compare(k, p.lower) < 0 {
		k = p.lower
	}
	if p.upper != nil && bytes.Compare(k, p.upper) >= 0 {
		return kv{}, false, nil
	}
	if p.ok && bytes.Compare(k, p.lo) >= 0 && (p.hiEnd || bytes.Compare(k, p.hi) < 0) {
		i := sort.Search(len(p.win), func(i int) bool { return bytes.Compare(p.win[i].k, k) >= 0 })
		if i < len(p.win) {
			return p.win[i], true, nil
		}
		if p.hiEnd {
			return kv{}, false, nil
		}
	}
	n := p.pageSize()
	var rows []kv
	var err error
	if p.upper != nil {
		rows, err = p.r.rows(p.r.st.ascTo, k, p.upper, n)
	} else {
		rows, err = p.r.rows(p.r.st.asc, k, n)
	}
	if err != nil {
		p.ok = false
		return kv{}, false, err
	}
	p.win, p.ok = rows, true
	p.lo, p.loStart = slices.Clone(k), bytes.Equal(k, p.lower)
	p.hiEnd = len(rows) < n
	if !p.hiEnd { // the last row's immediate successor
		p.hi = append(slices.Clone(rows[len(rows)-1].k), 0)
	}
	if len(rows) == 0 {
		return kv{}, false, nil
	}
	return rows[0], true, nil
}

func (p *pager) lt(k []byte) (kv, bool, error) {
	if k == nil || p.upper != nil && bytes.Compare(k, p.upper) > 0 {
		k = p.upper // may stay nil: past every key
	}
	if k != nil && bytes.Compare(k, p.lower) <= 0 {
		return kv{}, false, nil
	}
	if k != nil && !p.ok {
		return p.around(k)
	}
	inWin := p.ok && (p.hiEnd || k != nil && bytes.Compare(k, p.hi) <= 0) &&
		(k == nil || bytes.Compare(k, p.lo) > 0)
	if inWin {
		i := len(p.win)
		if k != nil {
			i = sort.Search(len(p.win), func(i int) bool { return bytes.Compare(p.win[i].k, k) >= 0 })
		}
		if i > 0 {
			return p.win[i-1], true, nil
		}
		if p.loStart {
			return kv{}, false, nil
		}
	}
	n := p.pageSize()
	var rows []kv
	var err error
	if k != nil {
		rows, err = p.r.rows(p.r.st.descFrom, k, p.lower, n)
	} else {
		rows, err = p.r.rows(p.r.st.desc, p.lower, n)
	}
	if err != nil {
		p.ok = false
		return kv{}, false, err
	}
	slices.Reverse(rows)
	p.win, p.ok = rows, true
	p.hi, p.hiEnd = slices.Clone(k), k == nil || p.upper != nil && bytes.Equal(k, p.upper)
	p.loStart = len(rows) < n
	if p.loStart {
		p.lo = p.lower
	} else {
		p.lo = rows[0].k
	}
	if len(rows) == 0 {
		return kv{}, false, nil
	}
	return rows[len(rows)-1], true, nil
}

// Rows a pager's first seek below a key reads before it: a seek below
// a key is most often followed by moves forward (an extent scan's
// first step), so it reads a few rows back and a page forward in one
// round trip.
const aroundBack = 4

// around is lt(k) for a pager that has read nothing yet: the rows just
// below k and a page of those from k on, in one statement.
func (p *pager) around(k []byte) (kv, bool, error) {
	fwd := 2 * p.pageSize()
	var rows []kv
	var err error
	if p.upper != nil {
		rows, err = p.r.rows(p.r.st.aroundTo, k, p.lower, aroundBack, fwd, p.upper)
	} else {
		rows, err = p.r.rows(p.r.st.around, k, p.lower, aroundBack, fwd)
	}
	if err != nil {
		return kv{}, false, err
	}
	// The two halves' order in the result is not promised: split by key.
	var back, ahead []kv
	for _, e := range rows {
		if bytes.Compare(e.k, k) < 0 {
			back = append(back, e)
		} else {
			ahead = append(ahead, e)
		}
	}
	byKey := func(a, b kv) int { return bytes.Compare(a.k, b.k) }
	slices.SortFunc(back, byKey)
	slices.SortFunc(ahead, byKey)
	p.win, p.ok = append(back, ahead...), true
	p.loStart = len(back) < aroundBack
	if p.loStart {
		p.lo = p.lower
	} else {
		p.lo = back[0].k
	}
	p.hiEnd = len(ahead) < fwd
	if !p.hiEnd { // the last row's immediate successor
		p.hi = append(slices.Clone(ahead[len(ahead)-1].k), 0)
	}
	if len(back) == 0 {
		return kv{}, false, nil
	}
	return back[len(back)-1], true, nil
}
