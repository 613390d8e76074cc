package content

import (
	"sync/atomic"

	"github.com/doppelfs/doppel/internal/schema"
)

// createdLog lets a transaction skip the chunk table lookup of a chunk
// that Prepare looked up and did not find, most of a stream of fresh
// data: each such lookup costs as much as the first (on PostgreSQL, part
// of a round trip). The record can only have appeared since by a commit
// that created it, and the log remembers which hashes recent commits
// created, and when.
//
// gen counts commits that created chunk records; a commit is visible to
// every lookup that reads gen after the commit bumped it. A chunk Prepare
// missed at gen g needs a lookup at commit only if a record for its hash
// was created at a gen after g, or if g is older than what the log still
// holds (two maps of recent hashes, rotated when the newer fills up).
type createdLog struct {
	gen atomic.Uint64
	// cur holds the creations at gens after curStart, prev those after
	// prevStart up to curStart; guarded by txMu.
	cur, prev           map[schema.Hash]uint64
	curStart, prevStart uint64
	// filter, when set, holds every hash the chunk table holds
	// (dedupfilter.go); record adds to it before moving gen.
	filter atomic.Pointer[dedupFilter]
}

// createdLogSize is how many hashes each map holds before rotating: with
// 4 KiB chunks, about 64 MiB of fresh data per map, in about 2 MiB.
const createdLogSize = 16 << 10

// missGen is the gen to remember with a lookup about to be made.
func (l *createdLog) missGen() uint64 { return l.gen.Load() }

// mayExist reports whether chunk h, missing from the chunk table when
// looked up at gen g, may have a record now. The caller holds txMu.
func (l *createdLog) mayExist(h schema.Hash, g uint64) bool {
	if g < l.prevStart {
		return true // older than what the log holds
	}
	if c, ok := l.cur[h]; ok && c > g {
		return true
	}
	c, ok := l.prev[h]
	return ok && c > g
}

// record notes that a commit created the records of hashes. It runs under
// txMu once the commit is visible to readers, so that a lookup reading
// the new gen sees the records.
func (l *createdLog) record(hashes []schema.Hash) {
	if len(hashes) == 0 {
		return
	}
	if f := l.filter.Load(); f != nil {
		for _, h := range hashes {
			f.add(h)
		}
	}
	g := l.gen.Load() + 1
	if l.cur == nil || len(l.cur) >= createdLogSize {
		l.prev, l.prevStart = l.cur, l.curStart
		l.cur, l.curStart = make(map[schema.Hash]uint64, createdLogSize), g-1
	}
	for _, h := range hashes {
		l.cur[h] = g
	}
	l.gen.Store(g)
}

// foreign notes that other processes may have created any record: every
// chunk missed by a lookup made so far is looked up again. The caller
// holds txMu.
func (l *createdLog) foreign() {
	l.filter.Store(nil) // never trusted where others create records
	g := l.gen.Load() + 1
	l.cur, l.prev = nil, nil
	l.curStart, l.prevStart = g, g
	l.gen.Store(g)
}
