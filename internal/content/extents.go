package content

import (
	"fmt"
	"math"
	"slices"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Piece is an extent with its file offset.
type Piece struct {
	Off int64
	schema.Extent
	// whole is, for a piece a read clipped out of an extent over a whole
	// chunk, that extent's hint and the chunk's length: the read can load
	// the whole chunk through it instead of looking its record up. It is
	// never stored (put writes Extent).
	whole wholeHint
}

// wholeHint is the location hint of a whole chunk of length bytes.
type wholeHint struct {
	hint   schema.Hint
	length uint32
	owned  bool // the extent owns the bytes at hint (owned.go)
}

// End is the file offset just past the piece.
func (p Piece) End() int64 { return p.Off + int64(p.Length) }

// clip narrows p to [start, end), which must overlap it. A narrowed
// piece is no longer its whole chunk and loses its location hint (which
// it keeps as whole, for reads).
func (p Piece) clip(start, end int64) Piece {
	if (start > p.Off || p.End() > end) && p.Hint.Has() {
		p.whole = wholeHint{hint: p.Hint, length: p.Length, owned: p.Owned}
		p.Hint, p.Owned = schema.Hint{}, false
	}
	if start > p.Off {
		d := start - p.Off
		p.ChunkOff += uint32(d)
		p.Length -= uint32(d)
		p.Off = start
	}
	if e := p.End(); e > end {
		p.Length -= uint32(e - end)
	}
	return p
}

// Extents returns the pieces of ino's extent map overlapping [start, end),
// clipped to that range, in file order.
func Extents(r meta.Reader, ino uint64, start, end int64) ([]Piece, error) {
	var out []Piece
	err := scanExtents(r, ino, start, end, func(p Piece) error {
		out = append(out, p.clip(start, end))
		return nil
	})
	return out, err
}

// scanExtents calls fn for every whole extent overlapping [start, end).
func scanExtents(r meta.Reader, ino uint64, start, end int64, fn func(Piece) error) error {
	if end <= start {
		return nil
	}
	lower, _ := schema.ExtentRange(ino)
	it, err := r.NewIter(lower, schema.ExtentKey(ino, end))
	if err != nil {
		return err
	}
	defer it.Close()
	if err := seekExtent(it, ino, start); err != nil {
		return err
	}
	for ; it.Valid(); it.Next() {
		p, err := piece(it)
		if err != nil {
			return &RecordError{Ino: ino, Record: "extent", Err: err}
		}
		if p.End() <= start {
			continue
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	return it.Error() // a failed move ends the loop like the last extent
}

// seekExtent moves it, an iterator over ino's extents, to the first
// extent that ends past off: the one starting before off if it reaches
// past it (an extent may start before a range and reach into it), else
// the one after. A failed move leaves it invalid, with its Error.
func seekExtent(it meta.Iterator, ino uint64, off int64) error {
	if !it.SeekLT(schema.ExtentKey(ino, off)) {
		if it.Error() == nil {
			it.First()
		}
		return nil
	}
	p, err := piece(it)
	if err != nil {
		return &RecordError{Ino: ino, Record: "extent", Err: err}
	}
	if p.End() <= off {
		it.Next()
	}
	return nil
}

func piece(it meta.Iterator) (Piece, error) {
	off, err := schema.ExtentOffset(it.Key())
	if err != nil {
		return Piece{}, err
	}
	return decodePiece(off, it.Value())
}

// decodePiece decodes the extent record value v of the extent at off.
func decodePiece(off int64, v []byte) (Piece, error) {
	x, err := schema.DecodeExtent(v)
	if err != nil {
		return Piece{}, fmt.Errorf("extent at %d: %w", off, err)
	}
	return Piece{Off: off, Extent: x}, nil
}

// Punch removes ino's data in [start, end), leaving a hole, and returns the
// change in mapped bytes (zero or negative).
func (t *Tx) Punch(ino uint64, start, end int64) (int64, error) {
	var whole []Piece
	if err := scanExtents(t.b, ino, start, end, func(p Piece) error {
		whole = append(whole, p)
		return nil
	}); err != nil {
		return 0, err
	}
	var carry *Piece
	return t.punchPieces(ino, whole, start, end, &carry)
}

// put stores one extent and counts its reference. A piece of an owned
// block is stored as an ordinary reference to it (owned.go).
func (t *Tx) put(ino uint64, p Piece) error {
	x := t.ref(p)
	t.extentsChanged(ino, p.Off, p.End())
	return t.setExtent(ino, p.Off, &x)
}

// setExtent sets ino's extent at off to x. Key and record are made in the
// transaction's scratch buffer: one extent is set per block written, and
// two allocations each were a tenth of the allocations of a copy into a
// disk image.
func (t *Tx) setExtent(ino uint64, off int64, x *schema.Extent) error {
	k := schema.AppendExtentKey(t.scratch[:0], ino, off)
	b := x.AppendEncode(k)
	t.scratch = b
	return t.b.Set(b[:len(k):len(k)], b[len(k):])
}

// WriteChunks makes the prepared chunks ino's content at their offsets and
// returns the change in mapped bytes.
func (t *Tx) WriteChunks(ino uint64, chunks []*Prepared) (int64, error) {
	return t.WriteRanges(ino, [][]*Prepared{chunks})
}

// putChunks adds the extents of chunks, whose range holds no extent, and
// returns the change in mapped bytes.
func (t *Tx) putChunks(ino uint64, chunks []*Prepared) (int64, error) {
	var mapped int64
	t.Adopt(chunks)
	t.ownedHint = max(t.ownedHint, len(chunks))
	for _, c := range chunks {
		if c.Zero || c.keptExtent {
			continue // a hole; an extent set over its old one (mapped bytes unchanged)
		}
		mapped += int64(c.Len)
		t.delta.LogicalBytes += int64(c.Len)
		if c.overwrote {
			if err := t.putOverwritten(ino, c); err != nil {
				return 0, err
			}
			continue
		}
		if o := t.ownedFresh[c.Hash]; o != nil {
			// The same bytes as a block this transaction wrote owned.
			if err := t.put(ino, Piece{Off: c.Off, Extent: ownedExtentOf(o)}); err != nil {
				return 0, err
			}
			continue
		}
		if t.ownsFresh(c) {
			if err := t.putOwned(ino, c); err != nil {
				return 0, err
			}
			continue
		}
		if cur, ok := t.fresh[c.Hash]; !ok || (!cur.hasBytes() && c.hasBytes()) {
			t.fresh[c.Hash] = c
		}
		hint := t.e.hintOf(t.fresh[c.Hash]) // where the copy this commit keeps is
		if err := t.put(ino, Piece{Off: c.Off, Extent: schema.Extent{Hash: c.Hash, Length: uint32(c.Len), Hint: hint}}); err != nil {
			return 0, err
		}
	}
	return mapped, nil
}

// Copy makes [dstOff, dstOff+n) of dst share the chunks of [srcOff,
// srcOff+n) of src: no data is read or written. It returns the change in
// dst's mapped bytes.
func (t *Tx) Copy(src uint64, srcOff int64, dst uint64, dstOff, n int64) (int64, error) {
	pieces, err := Extents(t.b, src, srcOff, srcOff+n)
	if err != nil {
		return 0, err
	}
	mapped, err := t.Punch(dst, dstOff, dstOff+n)
	if err != nil {
		return 0, err
	}
	for _, p := range pieces {
		p.Off += dstOff - srcOff
		if err := t.put(dst, p); err != nil {
			return 0, err
		}
		mapped += int64(p.Length)
		t.delta.LogicalBytes += int64(p.Length)
	}
	return mapped, nil
}

// DropAll removes every extent of ino (the file is being deleted).
func (t *Tx) DropAll(ino uint64) error {
	_, err := t.Punch(ino, 0, math.MaxInt64)
	return err
}

// Shift moves every extent of ino at or past from by delta bytes: the
// metadata-only half of collapsing (delta < 0) or inserting (delta > 0) a
// range. An extent straddling from is split there and only its right part
// moves. With delta < 0 the caller has emptied [from+delta, from) first
// (Punch), so nothing lands on an extent that stays. Mapped bytes do not
// change; a split adds a chunk reference, as Punch's do.
func (t *Tx) Shift(ino uint64, from, delta int64) error {
	var pieces []Piece
	if err := scanExtents(t.b, ino, from, math.MaxInt64, func(p Piece) error {
		pieces = append(pieces, p)
		return nil
	}); err != nil {
		return err
	}
	if delta > 0 {
		// Highest first, so that no moved extent is set on a key that is
		// deleted after (moving down, the scan order is that already).
		slices.Reverse(pieces)
	}
	for _, p := range pieces {
		t.extentsChanged(ino, p.Off, p.End())
		if err := t.b.Delete(schema.ExtentKey(ino, p.Off)); err != nil {
			return err
		}
		t.unref(p)
		if p.Off < from {
			if err := t.put(ino, p.clip(p.Off, from)); err != nil {
				return err
			}
			p = p.clip(from, p.End())
		}
		p.Off += delta
		if err := t.put(ino, p); err != nil {
			return err
		}
	}
	return nil
}
