package content

import "sync"

// A stream's old extents, read once. PlanInPlace reads them outside the
// transaction, to plan writes in place; the transaction that commits the
// stream (WriteRanges) takes them instead of reading them again, under
// the transaction lock, when no commit changed the file's extents in the
// plan's range in between. Commits of one file's streams follow one
// another, so that read was a share of the time every other commit
// waited. The range matters: a client that copies an image over several
// connections (nbdcopy: four) keeps streams of several parts of one file
// in flight, and each plan is read before the streams ahead of it
// commit; counted per file, nearly every plan was stale by its commit.

// extentSpan is the range of a file's extents a transaction changed: the
// union of the pieces it put or deleted, [lo, hi).
type extentSpan struct{ lo, hi int64 }

func (s extentSpan) overlaps(lo, hi int64) bool { return s.lo < hi && lo < s.hi }

// extentLogSize is how many recent changes extentLog keeps: a plan older
// than the changes it kept is read again.
const extentLogSize = 256

// extentChange is one transaction's change to one file's extents.
type extentChange struct {
	gen  uint64 // the count of commits that changed extents, this one included
	ino  uint64
	span extentSpan
}

// extentLog counts the commits that changed (or may have changed)
// extents and keeps the last extentLogSize changes. A commit counts once
// its batch committed, before the next transaction may begin.
type extentLog struct {
	mu      sync.Mutex
	gen     uint64
	ring    [extentLogSize]extentChange
	next    int    // ring[next] is overwritten next
	dropped uint64 // the newest gen whose changes left the ring
}

// current is the count of commits so far.
func (l *extentLog) current() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gen
}

// record counts a commit that changed spans.
func (l *extentLog) record(spans map[uint64]extentSpan) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen++
	for ino, s := range spans {
		old := &l.ring[l.next]
		if old.gen != 0 {
			l.dropped = max(l.dropped, old.gen)
		}
		*old = extentChange{gen: l.gen, ino: ino, span: s}
		l.next = (l.next + 1) % extentLogSize
	}
}

// changedSince reports whether a commit counted after gen changed ino's
// extents in [lo, hi), or may have (its change is no longer kept).
func (l *extentLog) changedSince(gen, ino uint64, lo, hi int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gen == gen {
		return false
	}
	if l.dropped > gen {
		return true
	}
	for _, c := range l.ring {
		if c.gen > gen && c.ino == ino && c.span.overlaps(lo, hi) {
			return true
		}
	}
	return false
}

// extentPlan is the extents of ino overlapping [start, end), read outside
// a transaction when the count of commits was gen (read before them).
type extentPlan struct {
	ino        uint64
	gen        uint64
	start, end int64
	pieces     []Piece
}

// covers is the range of extents the plan read: the whole extents
// overlapping [start, end) reach past it.
func (p *extentPlan) covers() (lo, hi int64) {
	lo, hi = p.start, p.end
	for _, x := range p.pieces {
		lo, hi = min(lo, x.Off), max(hi, x.End())
	}
	return lo, hi
}

// plannedExtents returns the extents of ino that overlap ranges as the
// plan the chunks of groups carry read them, if that is what the
// transaction would read now: the plan covers exactly the one range, and
// no commit since, nor this transaction, changed ino's extents where the
// plan read them.
func (t *Tx) plannedExtents(ino uint64, ranges [][2]int64, groups [][]*Prepared) ([]Piece, bool) {
	if len(ranges) != 1 {
		return nil, false
	}
	var p *extentPlan
	for _, g := range groups {
		if len(g) > 0 {
			p = g[0].plan
			break
		}
	}
	if p == nil || p.ino != ino || p.start != ranges[0][0] || p.end != ranges[0][1] {
		return nil, false
	}
	lo, hi := p.covers()
	if s, changed := t.extents[ino]; changed && s.overlaps(lo, hi) {
		return nil, false
	}
	if t.e.extentLog.changedSince(p.gen, ino, lo, hi) {
		return nil, false
	}
	return p.pieces, true
}
