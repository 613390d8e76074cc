package content

import (
	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Readahead for data stored in file order is the host's job: reads of
// such a window are sequential reads of one segment file, which the
// host's own readahead on that file already serves. Doppel's readahead
// (noteRead) walks every extent of its window to advise the host of
// their bytes, and the reads walk the same extents again: for an export's
// 4 KiB blocks that is 2,048 extents per 8 MiB window. A 4 GiB copy out
// of an export spent about a fifth of the server's CPU on it, and reads
// were faster without it (docs/BENCHMARKS.md, "Readahead left to the host
// for data stored in order"). Where the data is scattered (a disk image
// after random writes), the host's readahead cannot guess the next
// places, and doppel's made cold sequential reads about twice as fast.
//
// endsInOrder tells the two apart from the window's two ends alone
// (windowEnds: one iterator, a seek and a step to the last extent,
// instead of a walk), and endsInMemory tells, from the same two ends,
// a window whose data is in memory already, where readahead has nothing
// to do either.

// spreadMax is how many times farther apart than in the file a window's
// two ends may lie in their segment and still count as stored in order.
// A copy over several connections (nbdcopy makes four) commits runs of
// each connection's region between the others' runs: each region still
// moves forward through the segment, in runs of hundreds of KiB that the
// host's readahead follows. Chunks of variable size are also padded to
// blob.Align. After random writes, a window's ends lie anywhere in the
// file's segments, rarely this close in this order.
const spreadMax = 8

// windowEnds returns the first and last extents of ino in [from, to);
// empty reports a window without extents.
func windowEnds(r meta.Reader, ino uint64, from, to int64) (first, last Piece, empty bool, err error) {
	lower, _ := schema.ExtentRange(ino)
	it, err := r.NewIter(lower, schema.ExtentKey(ino, to))
	if err != nil {
		return Piece{}, Piece{}, false, err
	}
	defer it.Close()
	if !it.SeekGE(schema.ExtentKey(ino, from)) {
		return Piece{}, Piece{}, it.Error() == nil, it.Error()
	}
	if first, err = piece(it); err != nil {
		return Piece{}, Piece{}, false, err
	}
	if !it.Last() {
		return Piece{}, Piece{}, false, it.Error()
	}
	last, err = piece(it)
	return first, last, false, err
}

// endsInOrder reports whether a window's first and last extents both
// carry location hints (hints.go), in the same segment, as far apart
// there as in the file or up to spreadMax times farther. A chunk in
// between stored elsewhere (dedup found it, or it was overwritten since)
// is not seen; its read then waits for the disk, as any read without
// readahead does.
func endsInOrder(first, last Piece) bool {
	if !first.Hint.Has() || !last.Hint.Has() || last.Hint.Segment != first.Hint.Segment || last.Hint.Offset < first.Hint.Offset {
		return false
	}
	fileDist, segDist := uint64(last.Off-first.Off), last.Hint.Offset-first.Hint.Offset
	return segDist >= fileDist && segDist <= spreadMax*fileDist+blob.Align
}

// endsInMemory reports whether the bytes of a window's first and last
// extents are in memory, the blob store says (blob.ResidencyProber).
// Readahead of such a window, data just written or read, would only
// walk its extents and advise the host of pages it holds: after a copy
// over an export's data had scattered it through the segments, a copy
// out spent a fifth of the server's CPU on that, and took a quarter
// longer than without readahead (docs/BENCHMARKS.md, "Content-defined
// chunks through the sixteen lanes; readahead of data in memory"). As
// with endsInOrder, the chunks in between are not seen.
func (e *Engine) endsInMemory(first, last Piece) bool {
	prober, ok := e.blobs.(blob.ResidencyProber)
	if !ok {
		return false
	}
	for _, p := range []Piece{first, last} {
		loc, ok := e.hintedLoc(p)
		if !ok || !prober.InMemory(loc) {
			return false
		}
	}
	return true
}
