package content

import (
	"sort"
	"sync"

	"github.com/doppelfs/doppel/internal/meta"
)

// Extent windows: decoded extents of a range of a file, kept for the
// reads that come next. A sequential reader of a block export's 4 KiB
// blocks (nbdcopy out, a guest reading its disk) otherwise walks the
// extent table twice for every byte: once for BLOCK_STATUS (SeekHoleBefore
// over up to the whole range a copier asks about) and again, by a fresh
// iterator and seek, for each read; together about a quarter of the
// server's CPU in a copy out (docs/BENCHMARKS.md, "Extent windows").
// On a shared volume every such scan is a round trip to PostgreSQL, made
// while the read waits: at 0.5 ms a round trip, a 1 MiB read's scan
// capped a cold sequential read at about 300 MB/s (docs/BENCHMARKS.md,
// "Extent windows on shared volumes").
//
// A window holds whole extents (as scanExtents gives them) covering
// [start, end) of one inode, as the store held them at some moment. Every
// transaction that changes an inode's extents drops that inode's windows
// when it commits (Tx.extentsChanged), before the transaction lock goes,
// and bumps seq; a window scanned while a commit was under way is stored
// only if seq did not move meanwhile, so no window outlives a change of
// what it holds. Only the engine's own store is windowed, and only where
// no other process commits to it: a clone's pinned reads are not, and an
// engine with Config.OtherWriters (a volume several hosts mount, whose
// changes reach this engine outside its transactions) keeps no windows.

// Window sizes. A window holds at most maxWindowPieces extents (128 MiB
// of 4 KiB blocks, about 8 MiB of memory); the cache at most
// maxWindowedPieces in all, the least recently used windows going first.
const (
	maxWindowPieces   = 32 << 10
	maxWindowedPieces = 128 << 10
	// seqReadAhead is how far past a sequential read its window reaches.
	seqReadAhead = 4 << 20
	// minSeqWindowRead is the smallest read that starts a window when it
	// continues the last read of its file.
	minSeqWindowRead = 64 << 10
)

type extentWindow struct {
	ino        uint64
	start, end int64
	pieces     []Piece // whole extents overlapping [start, end), in order
	used       uint64  // tick of the last use, for eviction
}

// extentWindows is the engine's cache of windows.
type extentWindows struct {
	mu       sync.Mutex
	seq      uint64 // bumped by every drop
	tick     uint64
	pieces   int // in all windows
	byIno    map[uint64][]*extentWindow
	lastEnds map[uint64]*recentEnds
}

func newExtentWindows() *extentWindows {
	return &extentWindows{byIno: map[uint64][]*extentWindow{}, lastEnds: map[uint64]*recentEnds{}}
}

// snapshot returns seq, to be handed to put with what a scan begun after
// it found.
func (w *extentWindows) snapshot() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

// get returns the whole extents overlapping [start, end) of ino from a
// window that covers the range, if one does.
func (w *extentWindows) get(ino uint64, start, end int64) ([]Piece, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, win := range w.byIno[ino] {
		if win.start <= start && end <= win.end {
			w.tick++
			win.used = w.tick
			i := sort.Search(len(win.pieces), func(i int) bool { return win.pieces[i].End() > start })
			j := i + sort.Search(len(win.pieces)-i, func(k int) bool { return win.pieces[i+k].Off >= end })
			return win.pieces[i:j], true
		}
	}
	return nil, false
}

// sequential notes a read of [off, end) of ino and reports whether it
// continues one of the file's recent reads (several copier threads may
// each read their own part of a file in order). It is not the readahead's
// test (loads.noteRead): that one follows a single reader per file, within
// a window either side of its last read, because parallel FUSE requests of
// one reader arrive out of order; a window is worth its scan only for a
// read that continues another exactly, and nbdcopy reads one export from
// several connections at once, each in order.
func (w *extentWindows) sequential(ino uint64, off, end int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	ends, ok := w.lastEnds[ino]
	if !ok && len(w.lastEnds) >= 1024 {
		clear(w.lastEnds) // bounded: a forgotten file only loses its windows
	}
	if ends == nil {
		ends = &recentEnds{}
	}
	w.lastEnds[ino] = ends
	hit := false
	for i, e := range ends.ends {
		if e == off && e != 0 {
			ends.ends[i], hit = end, true
			break
		}
	}
	if !hit {
		ends.ends[ends.next] = end
		ends.next = (ends.next + 1) % len(ends.ends)
	}
	return hit
}

// recentEnds are where a file's last few reads ended.
type recentEnds struct {
	ends [8]int64
	next int
}

// put stores the window [start, end) of ino that a scan begun at seq
// found, unless an inode's extents changed since.
func (w *extentWindows) put(ino uint64, start, end int64, pieces []Piece, seq uint64) {
	if len(pieces) > maxWindowPieces || end <= start {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if seq != w.seq {
		return
	}
	w.tick++
	win := &extentWindow{ino: ino, start: start, end: end, pieces: pieces, used: w.tick}
	w.byIno[ino] = append(w.byIno[ino], win)
	w.pieces += len(pieces)
	for w.pieces > maxWindowedPieces {
		w.evictOldest()
	}
}

// evictOldest drops the least recently used window. w.mu is held.
func (w *extentWindows) evictOldest() {
	var oldest *extentWindow
	for _, wins := range w.byIno {
		for _, win := range wins {
			if oldest == nil || win.used < oldest.used {
				oldest = win
			}
		}
	}
	if oldest == nil {
		w.pieces = 0
		return
	}
	wins := w.byIno[oldest.ino]
	for i, win := range wins {
		if win == oldest {
			wins = append(wins[:i], wins[i+1:]...)
			break
		}
	}
	if len(wins) == 0 {
		delete(w.byIno, oldest.ino)
	} else {
		w.byIno[oldest.ino] = wins
	}
	w.pieces -= len(oldest.pieces)
}

// drop forgets the windows of inos (after a commit changed their extents)
// and fails every put of a scan begun before.
func (w *extentWindows) drop(inos map[uint64]extentSpan) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	for ino := range inos {
		for _, win := range w.byIno[ino] {
			w.pieces -= len(win.pieces)
		}
		delete(w.byIno, ino)
	}
}

// windowed returns the whole extents of ino overlapping [off, end) from a
// window, for a read from r: one that covers the range, or a new one when
// the read continues an earlier one (reaching seqReadAhead further). It
// reports false when the read should scan the store as it did before.
func (e *Engine) windowed(r meta.Reader, ino uint64, off, end int64) ([]Piece, bool, error) {
	w := e.windowsFor(r)
	if w == nil {
		return nil, false, nil
	}
	seq := w.sequential(ino, off, end)
	if ps, ok := w.get(ino, off, end); ok {
		e.counters.windowHits.Add(1)
		return ps, true, nil
	}
	if !seq || end-off < minSeqWindowRead {
		return nil, false, nil
	}
	all, err := w.scan(r, ino, off, end+seqReadAhead)
	if err != nil {
		return nil, false, err
	}
	n := sort.Search(len(all), func(i int) bool { return all[i].Off >= end })
	return all[:n], true, nil
}

// windowsFor returns the engine's windows if reads from r may use them:
// r is the engine's own store and the engine keeps windows. Else nil.
func (e *Engine) windowsFor(r meta.Reader) *extentWindows {
	if e.windows == nil || r != meta.Reader(e.meta) {
		return nil
	}
	return e.windows
}

// scan reads the whole extents of ino overlapping [start, end) from r and
// keeps them as a window, unless a commit overtook the scan.
func (w *extentWindows) scan(r meta.Reader, ino uint64, start, end int64) ([]Piece, error) {
	at := w.snapshot()
	var whole []Piece
	if err := scanExtents(r, ino, start, end, func(p Piece) error {
		whole = append(whole, p)
		return nil
	}); err != nil {
		return nil, err
	}
	w.put(ino, start, end, whole, at)
	return whole, nil
}
