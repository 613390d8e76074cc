package content

import "sync/atomic"

// A stream's old extents, read once. PlanInPlace reads them outside the
// transaction, to plan writes in place; the transaction that commits the
// stream (WriteRanges) takes them instead of reading them again, under
// the transaction lock, when no commit changed the file's extents in
// between. Commits of one file's stream follow one another, so that read
// was a share of the time every other commit waited.

// extentGenBuckets is how many counters extentGens keeps: inodes share
// them, and a commit that changes one inode's extents only sends the
// plans of the others in its bucket back to reading.
const extentGenBuckets = 1024

// extentGens counts, per bucket of inodes, the commits that changed (or
// may have changed) their extents. A commit counts once its batch
// committed, before the next transaction may begin.
type extentGens [extentGenBuckets]atomic.Uint64

func (g *extentGens) of(ino uint64) uint64 { return g[ino%extentGenBuckets].Load() }

func (g *extentGens) bump(inos map[uint64]struct{}) {
	for ino := range inos {
		g[ino%extentGenBuckets].Add(1)
	}
}

// extentPlan is the extents of ino overlapping [start, end), read outside
// a transaction when ino's count was gen (read before them).
type extentPlan struct {
	ino        uint64
	gen        uint64
	start, end int64
	pieces     []Piece
}

// plannedExtents returns the extents of ino that overlap ranges as the
// plan the chunks of groups carry read them, if that is what the
// transaction would read now: the plan covers exactly the one range, no
// commit changed ino's extents since, and neither did this transaction.
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
	if _, changed := t.extents[ino]; changed || t.e.extentGens.of(ino) != p.gen {
		return nil, false
	}
	return p.pieces, true
}
