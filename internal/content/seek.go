package content

import (
	"io"
	"math"

	"github.com/doppelfs/doppel/internal/meta"
)

// SeekData returns the first offset >= off inside stored data, or -1.
func (e *Engine) SeekData(r meta.Reader, ino uint64, off int64) (int64, error) {
	found := int64(-1)
	err := scanExtents(r, ino, off, math.MaxInt64, func(p Piece) error {
		found = max(p.Off, off)
		return io.EOF
	})
	if err == io.EOF {
		err = nil
	}
	return found, err
}

// SeekHole returns the first offset >= off not inside stored data.
func (e *Engine) SeekHole(r meta.Reader, ino uint64, off int64) (int64, error) {
	return e.SeekHoleBefore(r, ino, off, math.MaxInt64)
}

// SeekHoleBefore is SeekHole for a caller that needs no answer past limit:
// it returns limit if [off, limit) holds no hole, having read only the
// extents below limit. Finding the next hole of a file stored without
// any reads every extent up to its end; a block export's BLOCK_STATUS,
// asked over and over for parts of a large disk, would read them again
// each time.
//
// A file's extent map (extent_map.go) answers it when the file has one.
// Else the extents it reads become a window (extent_window_cache.go) for
// the reads that follow, and a window that covers [off, limit) answers it.
func (e *Engine) SeekHoleBefore(r meta.Reader, ino uint64, off, limit int64) (int64, error) {
	pos := off
	step := func(p Piece) error {
		if p.Off > pos {
			return io.EOF
		}
		pos = max(pos, p.End())
		return nil
	}
	if m := e.mapsFor(r); m != nil && limit > off {
		if m.each(ino, off, limit, func(p Piece) bool { return step(p) == nil }) {
			e.counters.mapHits.Add(1)
			return min(pos, limit), nil
		}
	}
	w := e.windowsFor(r)
	if w == nil || limit <= off {
		err := scanExtents(r, ino, off, limit, step)
		if err == io.EOF {
			err = nil
		}
		return min(pos, max(limit, off)), err
	}
	if ps, ok := w.get(ino, off, limit); ok {
		e.counters.windowHits.Add(1)
		for _, p := range ps {
			if step(p) != nil {
				break
			}
		}
		return min(pos, limit), nil
	}
	at := w.snapshot()
	var seen []Piece
	keep := true // false once the range is too long for a window
	err := scanExtents(r, ino, off, limit, func(p Piece) error {
		if err := step(p); err != nil {
			return err
		}
		if keep = keep && len(seen) < maxWindowPieces; keep {
			seen = append(seen, p)
		} else {
			seen = nil
		}
		return nil
	})
	if err == io.EOF {
		err = nil
	}
	if err != nil {
		return 0, err
	}
	if end := min(pos, limit); keep && end > off {
		w.put(ino, off, end, seen, at)
	}
	return min(pos, limit), nil
}
