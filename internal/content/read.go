package content

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// ReadAt fills buf with ino's stored content at off; holes read as zeros.
// The caller clips buf to the file size and must keep the file's extents
// from changing during the call.
func (e *Engine) ReadAt(ino uint64, off int64, buf []byte) error {
	return e.ReadAtFrom(e.meta, ino, off, buf)
}

// ReadAtFrom is ReadAt with ino's extents read from r: a clone's file that
// is not materialized yet reads its origin's extents as of a pin.
//
// The extents are read first; then the records of the whole uncompressed
// chunks that are not cached are looked up together (readRecords), and runs
// of such chunks that lie next to each other both in the file and in one
// segment (what a sequential write of fixed-size blocks stores) are read
// with one blob store read and verified chunk by chunk. A read of 1 MiB of
// an export's 4 KiB blocks thus costs a few reads instead of 256, and one
// walk of the chunk table instead of 256 point lookups.
func (e *Engine) ReadAtFrom(r meta.Reader, ino uint64, off int64, buf []byte) error {
	if e.owned {
		e.ownedDedup.reads.Add(1) // background passes wait for reads to pause
	}
	err := e.readAtFrom(r, ino, off, buf)
	if err == nil || !e.inPlace || !errors.Is(err, ErrCorrupt) {
		return err
	}
	// An owned block written over in place after this read took its
	// extent fails the old check (inplace.go): read again once the
	// transaction that wrote it has ended, and again while other
	// transactions commit between the tries (a writer may overwrite the
	// block once more meanwhile). A failure with no commit since the try
	// before is damage.
	seen := e.settledVersion()
	for range maxInPlaceRetries {
		if err = e.readAtFrom(r, ino, off, buf); err == nil || !errors.Is(err, ErrCorrupt) {
			return err
		}
		v := e.settledVersion()
		if v == seen {
			break
		}
		seen = v
	}
	return err
}

// maxInPlaceRetries bounds the reads again of a read that keeps meeting
// blocks overwritten in place under it.
const maxInPlaceRetries = 100

// settledVersion waits for the transaction under way, if any, and returns
// the volume version committed.
func (e *Engine) settledVersion() uint64 {
	e.txMu.Lock()
	defer e.txMu.Unlock()
	return e.version
}

func (e *Engine) readAtFrom(r meta.Reader, ino uint64, off int64, buf []byte) error {
	end := off + int64(len(buf))
	pos := off // bytes before pos are filled or found to be a hole
	var pieces []Piece
	add := func(p Piece) error {
		p = p.clip(off, end)
		if p.Off < pos { // only damaged metadata can say so
			return &RecordError{Ino: ino, Record: "extent", Err: fmt.Errorf("%w: extent at %d overlaps the one before", schema.ErrBadRecord, p.Off)}
		}
		clear(buf[pos-off : p.Off-off]) // a hole
		pieces = append(pieces, p)
		pos = p.End()
		return nil
	}
	win, ok := e.mapped(r, ino, off, end)
	if !ok {
		var err error
		if win, ok, err = e.windowed(r, ino, off, end); err != nil {
			return err
		}
	}
	if ok {
		for _, p := range win {
			if err := add(p); err != nil {
				return err
			}
		}
	} else {
		if len(buf) <= pointReadMax {
			p, ok, err := extentAt(r, ino, off)
			if err != nil {
				return err
			}
			if ok && p.End() >= end {
				pieces, pos = []Piece{p.clip(off, end)}, end
			}
		}
		if err := scanExtents(r, ino, pos, end, add); err != nil {
			return err
		}
	}
	clear(buf[pos-off:])
	direct, err := e.readPieces(pieces, buf, off)
	if err != nil {
		return fmt.Errorf("read inode %d: %w", ino, err)
	}
	if e.noteRead(r, ino, off, end) && len(direct) > 0 && !e.keepsHostCache(ino) {
		// A streaming reader: the kernel keeps these bytes as the file's
		// own pages (across opens), so the host's copy of the segment
		// bytes would only cache them twice (hostcache.go).
		e.blobs.Forget(direct)
	}
	return nil
}

// pointReadMax is the longest read that first looks for an extent
// starting exactly where it starts (extentAt).
const pointReadMax = 64 << 10

// extentAt returns ino's extent that starts at off, if there is one. It is
// a point lookup, which the levels' bloom filters answer without searching
// the levels that lack the key, where scanExtents' backward seek searches
// every level (an index and a data block in each, once the extents of a
// large file no longer fit the block cache). A random read of a block
// export, whose 4 KiB blocks have an extent each, needs only this.
func extentAt(r meta.Reader, ino uint64, off int64) (Piece, bool, error) {
	v, err := r.Get(schema.ExtentKey(ino, off))
	if errors.Is(err, meta.ErrNotFound) {
		return Piece{}, false, nil
	}
	if err != nil {
		return Piece{}, false, err
	}
	p, err := decodePiece(off, v)
	if err != nil {
		return Piece{}, false, &RecordError{Ino: ino, Record: "extent", Err: err}
	}
	return p, true, nil
}

// maxRunRead bounds the bytes of one coalesced blob store read.
const maxRunRead = 4 << 20

// readPieces fills buf (which holds file data at off) with the bytes of
// pieces, in file order, and returns the locations read straight from the
// blob store.
func (e *Engine) readPieces(pieces []Piece, buf []byte, off int64) ([]blob.Loc, error) {
	// Whole chunks not in the cache and without a hint: their records,
	// looked up together.
	var want []schema.Hash
	for _, p := range pieces {
		if _, _, hinted := e.wholeChunkHint(p); !hinted && p.ChunkOff == 0 && !e.cache.c.Contains(p.Hash) {
			want = append(want, p.Hash)
		}
	}
	var recs map[schema.Hash]recordFound
	if len(want) > 1 {
		recs = e.readRecords(want)
	}
	var direct []blob.Loc
	for i := 0; i < len(pieces); {
		p := pieces[i]
		run, ok := e.directLoc(p, recs)
		if !ok {
			loc, err := e.readPiece(p, buf[p.Off-off:p.End()-off])
			if err != nil {
				return nil, fmt.Errorf("at %d: %w", p.Off, err)
			}
			if loc.Segment != 0 {
				direct = append(direct, loc)
			}
			i++
			continue
		}
		// A run of whole uncompressed chunks adjacent in the file and in
		// one segment.
		j := i + 1
		for ; j < len(pieces); j++ {
			q := pieces[j]
			l, ok := e.directLoc(q, recs)
			if !ok || q.Off != pieces[j-1].End() {
				break
			}
			if l.Segment != run.Segment || l.Offset != run.Offset+uint64(run.Length) || run.Length+l.Length > maxRunRead {
				break
			}
			run.Length += l.Length
		}
		if err := e.readRun(pieces[i:j], recs, run, buf[p.Off-off:pieces[j-1].End()-off]); err != nil {
			// Retry chunk by chunk by their records: this asks the store
			// again for records that were cached and went stale, and
			// passes over stale hints.
			for _, q := range pieces[i:j] {
				if _, err := e.readPiece(q, buf[q.Off-off:q.End()-off]); err != nil {
					return nil, fmt.Errorf("at %d: %w", q.Off, err)
				}
			}
		}
		direct = append(direct, run)
		i = j
	}
	return direct, nil
}

// directLoc returns where piece p's bytes lie whole and uncompressed in
// the blob store, by its hint or by its record in recs, if either says:
// such bytes can be read in place and verified there. A cached chunk is
// copied from the cache instead.
func (e *Engine) directLoc(p Piece, recs map[schema.Hash]recordFound) (blob.Loc, bool) {
	if loc, ok := e.hintedLoc(p); ok {
		return loc, !e.cache.c.Contains(p.Hash)
	}
	rf, ok := recs[p.Hash]
	if !ok || !readsDirect(p, rf.c) {
		return blob.Loc{}, false
	}
	return chunkLoc(rf.c), true
}

// readsDirect reports whether piece p is the whole of its chunk, stored
// uncompressed in the blob store as c says: its bytes can be read from
// the store in place.
func readsDirect(p Piece, c schema.Chunk) bool {
	return p.ChunkOff == 0 && storedWhole(c, p.Length)
}

// storedWhole reports whether chunk c, of n raw bytes, is stored
// uncompressed in the blob store, so that its bytes can be read in place.
func storedWhole(c schema.Chunk, n uint32) bool {
	return c.Comp == schema.CompNone && c.Stored == c.Raw && c.Raw == n && !c.IsInline()
}

// readRun reads run, the stored bytes of the chunks of pieces one after
// the other, into dst and verifies every chunk: by its hint's check, or
// by its record in recs.
func (e *Engine) readRun(pieces []Piece, recs map[schema.Hash]recordFound, run blob.Loc, dst []byte) error {
	e.counters.cacheMiss.Add(int64(len(pieces)))
	if _, err := e.blobs.Read(run, dst); err != nil {
		return err
	}
	if !e.cfg.VerifyReads {
		return nil
	}
	var bad atomic.Bool
	parallelIf(len(pieces) >= 16, len(pieces), func(k int) {
		q := pieces[k]
		d := dst[q.Off-pieces[0].Off : q.End()-pieces[0].Off]
		if _, hinted := e.hintedLoc(q); hinted {
			if schema.CheckSum(d) != q.Hint.Check {
				bad.Store(true)
			}
		} else if !intact(q.Hash, recs[q.Hash].c, d) {
			bad.Store(true)
		}
	})
	if bad.Load() {
		return ErrCorrupt
	}
	return nil
}

// parallelIf is parallel when cond holds, else a plain loop.
func parallelIf(cond bool, n int, fn func(i int)) {
	if cond {
		parallel(n, fn)
		return
	}
	for i := 0; i < n; i++ {
		fn(i)
	}
}

// recordFound is a chunk record and whether it came from the location
// cache (and may be stale).
type recordFound struct {
	c      schema.Chunk
	cached bool
}

// readRecords returns the records of the chunks hs, from the location
// cache where reads are verified (a stale one fails verification and is
// looked up again), else from the metadata store: together (recordsOf)
// for many, point lookups for a few. Chunks whose record
// cannot be read are left out; the reads report them.
func (e *Engine) readRecords(hs []schema.Hash) map[schema.Hash]recordFound {
	out := make(map[schema.Hash]recordFound, len(hs))
	var missing []schema.Hash
	for _, h := range hs {
		if e.cfg.VerifyReads {
			if c, ok := e.locs.c.Get(h); ok {
				out[h] = recordFound{c, true}
				continue
			}
		}
		missing = append(missing, h)
	}
	if len(missing) <= iterRefs {
		for _, h := range missing {
			if c, _, err := e.chunkRecord(h); err == nil {
				out[h] = recordFound{c, false}
			}
		}
		return out
	}
	e.recordsOf(missing, func(h schema.Hash, c schema.Chunk) { out[h] = recordFound{c, false} })
	return out
}

// readPiece fills dst with the bytes of piece p. A cached chunk is copied.
// A piece that is a whole uncompressed chunk is read from the blob store
// straight into dst and verified there: streaming readers cost no
// allocation and no extra copy, and do not churn the cache; its location
// is returned (else a zero Loc). Other pieces load their whole chunk
// through the cache, since the hash covers it all.
func (e *Engine) readPiece(p Piece, dst []byte) (blob.Loc, error) {
	if data, ok := e.cache.get(p.Hash); ok {
		e.counters.cacheHits.Add(1)
		return blob.Loc{}, copyPiece(dst, data, p)
	}
	loc, ownedErr := e.readOwned(p, dst)
	if ownedErr == nil {
		return loc, nil
	}
	if _, _, clipped := e.clippedHint(p); p.ChunkOff == 0 && !clipped {
		c, cached, err := e.chunkRecord(p.Hash)
		if err != nil {
			if errors.Is(err, ErrCorrupt) && loc.Segment != 0 {
				// No record names another copy: the owned bytes are
				// all there is.
				return blob.Loc{}, e.chunkError(p.Hash, loc, ownedErr)
			}
			return blob.Loc{}, err
		}
		if readsDirect(p, c) {
			e.counters.cacheMiss.Add(1)
			err := e.readInto(p.Hash, c, dst)
			if err != nil {
				if fresh, ok := e.movedRecord(p.Hash, c, cached); ok {
					c, err = fresh, e.readInto(p.Hash, fresh, dst)
				}
			}
			if err != nil {
				return blob.Loc{}, err
			}
			return chunkLoc(c), nil
		}
	}
	data, err := e.chunkDataOf(p)
	if err != nil {
		return blob.Loc{}, err
	}
	return blob.Loc{}, copyPiece(dst, data, p)
}

// copyPiece copies piece p's bytes out of its chunk's data.
func copyPiece(dst, data []byte, p Piece) error {
	if int(p.ChunkOff)+int(p.Length) > len(data) {
		return fmt.Errorf("%w: extent reaches past chunk %s", ErrCorrupt, p.Hash.Short())
	}
	copy(dst, data[p.ChunkOff:p.ChunkOff+p.Length])
	return nil
}
