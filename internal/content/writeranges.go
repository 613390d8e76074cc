package content

import (
	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// WriteRanges is WriteChunks for several groups of chunks, each group
// covering one contiguous range; the ranges are in file order and do not
// overlap. The result is that of WriteChunks on each group in turn, but
// the extents the groups replace are found with one iterator over the
// extent map instead of one per group: a flush of a random writer's
// thousands of small runs would otherwise open an iterator per run.
func (t *Tx) WriteRanges(ino uint64, groups [][]*Prepared) (int64, error) {
	var ranges [][2]int64
	for _, g := range groups {
		if len(g) > 0 {
			last := g[len(g)-1]
			ranges = append(ranges, [2]int64{g[0].Off, last.Off + int64(last.Len)})
		}
	}
	if len(ranges) == 0 {
		return 0, nil
	}
	old, planned := t.plannedExtents(ino, ranges, groups)
	if !planned {
		var err error
		if old, err = extentsOverlapping(t.b, ino, ranges); err != nil {
			return 0, err
		}
	}
	var mapped int64
	var carry *Piece // the right part of a split extent, put by this call
	next := 0        // old[next:] are untouched
	for _, g := range groups {
		if len(g) == 0 {
			continue
		}
		start, end := g[0].Off, g[len(g)-1].Off+int64(g[len(g)-1].Len)
		// Extents are disjoint and in order: those ending before start
		// lead, and the hits follow them side by side.
		for next < len(old) && old[next].Off < end && old[next].End() <= start {
			next++
		}
		first := next
		for next < len(old) && old[next].Off < end {
			next++
		}
		hits := old[first:next:next] // an append copies, leaving old[next:] alone
		if carry != nil && carry.End() > start {
			hits = append([]Piece{*carry}, hits...)
		}
		carry = nil
		hits, err := t.overwriteOwned(ino, g, hits)
		if err != nil {
			return 0, err
		}
		punched, err := t.punchPieces(ino, hits, start, end, &carry)
		if err != nil {
			return 0, err
		}
		mapped += punched
		if err := t.placeInPlace(ino, g); err != nil {
			return 0, err
		}
		added, err := t.putChunks(ino, g)
		if err != nil {
			return 0, err
		}
		mapped += added
	}
	return mapped, nil
}

// punchPieces removes the parts of pieces (extents overlapping [start,
// end)) inside that range, as Punch does, and returns the change in mapped
// bytes. The right part of a piece reaching past end is put back and
// returned in carry.
func (t *Tx) punchPieces(ino uint64, pieces []Piece, start, end int64, carry **Piece) (int64, error) {
	var mapped int64
	for _, p := range pieces {
		t.extentsChanged(ino, p.Off, p.End())
		if err := t.b.Delete(schema.ExtentKey(ino, p.Off)); err != nil {
			return 0, err
		}
		t.unref(p)
		mapped -= int64(p.Length)
		if p.Off < start {
			if err := t.put(ino, p.clip(p.Off, start)); err != nil {
				return 0, err
			}
			mapped += start - p.Off
		}
		if p.End() > end {
			right := p.clip(end, p.End())
			if err := t.put(ino, right); err != nil {
				return 0, err
			}
			mapped += p.End() - end
			*carry = &right
		}
	}
	t.delta.LogicalBytes += mapped
	return mapped, nil
}

// maxPiecesAhead bounds the room extentsOverlapping makes before it
// reads: a stream of 8 MiB in 4 KiB blocks.
const maxPiecesAhead = 2048 + 2

// seekGap is the distance between two ranges past which
// extentsOverlapping seeks rather than steps over the extents between
// them: a seek costs about what a dozen steps do.
const seekGap = 64 << 10

// piecesFor returns an empty slice with room for the extents overlapping
// ranges: a disk image's blocks (the most extents a range holds), up to a
// stream's worth. Growing the slice block by block was a tenth of the
// read.
func piecesFor(ranges [][2]int64) []Piece {
	var span int64
	for _, rg := range ranges {
		span += rg[1] - rg[0]
	}
	return make([]Piece, 0, min(span/blob.Align+2, maxPiecesAhead))
}

// extentsOverlapping returns the whole extents of ino that overlap any of
// ranges (in file order, disjoint), in file order and each once. One
// iterator serves all ranges; it seeks across wide gaps between them, so
// that a random writer's scattered runs do not cost a walk of every
// extent of a large file between the first and the last.
func extentsOverlapping(r meta.Reader, ino uint64, ranges [][2]int64) ([]Piece, error) {
	lower, _ := schema.ExtentRange(ino)
	it, err := r.NewIter(lower, schema.ExtentKey(ino, ranges[len(ranges)-1][1]))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	out := piecesFor(ranges)
	var prevEnd int64
	for i, rg := range ranges {
		start, end := rg[0], rg[1]
		if i == 0 || !it.Valid() || start-prevEnd > seekGap {
			if err := seekExtent(it, ino, start); err != nil {
				return nil, err
			}
		}
		prevEnd = end
		for ; it.Valid(); it.Next() {
			p, err := piece(it)
			if err != nil {
				return nil, &RecordError{Ino: ino, Record: "extent", Err: err}
			}
			if p.Off >= end {
				break
			}
			if p.End() <= start || (len(out) > 0 && p.Off <= out[len(out)-1].Off) {
				continue // before the range, or found for the range before
			}
			out = append(out, p)
		}
		if err := it.Error(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
