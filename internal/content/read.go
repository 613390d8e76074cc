package content

import (
	"fmt"
	"io"
	"math"

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
func (e *Engine) ReadAtFrom(r meta.Reader, ino uint64, off int64, buf []byte) error {
	end := off + int64(len(buf))
	pos := off            // bytes before pos are filled
	var direct []blob.Loc // chunks read from the store straight into buf
	err := scanExtents(r, ino, off, end, func(p Piece) error {
		p = p.clip(off, end)
		if p.Off < pos { // only damaged metadata can say so
			return &RecordError{Ino: ino, Record: "extent", Err: fmt.Errorf("%w: extent at %d overlaps the one before", schema.ErrBadRecord, p.Off)}
		}
		clear(buf[pos-off : p.Off-off]) // a hole
		loc, err := e.readPiece(p, buf[p.Off-off:p.End()-off])
		if err != nil {
			return fmt.Errorf("read inode %d at %d: %w", ino, p.Off, err)
		}
		if loc.Segment != 0 {
			direct = append(direct, loc)
		}
		pos = p.End()
		return nil
	})
	if err != nil {
		return err
	}
	clear(buf[pos-off:])
	if e.noteRead(r, ino, off, end) && len(direct) > 0 {
		// A streaming reader: the kernel keeps these bytes as the file's
		// own pages (across opens), so the host's copy of the segment
		// bytes would only cache them twice.
		e.blobs.Forget(direct)
	}
	return nil
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
	if p.ChunkOff == 0 {
		c, cached, err := e.chunkRecord(p.Hash)
		if err != nil {
			return blob.Loc{}, err
		}
		if c.Comp == schema.CompNone && c.Stored == c.Raw && c.Raw == p.Length {
			e.counters.cacheMiss.Add(1)
			err := e.readInto(p.Hash, c, dst)
			if err != nil && cached {
				// Perhaps a record gone stale: ask the store.
				e.locs.c.Remove(p.Hash)
				if c, _, err = e.chunkRecord(p.Hash); err == nil {
					err = e.readInto(p.Hash, c, dst)
				}
			}
			if err != nil {
				return blob.Loc{}, err
			}
			return chunkLoc(c), nil
		}
	}
	data, err := e.chunkData(p.Hash)
	if err != nil {
		return blob.Loc{}, err
	}
	return blob.Loc{}, copyPiece(dst, data, p)
}

// copyPiece copies piece p's bytes out of its chunk's data.
func copyPiece(dst, data []byte, p Piece) error {
	if int(p.ChunkOff)+int(p.Length) > len(data) {
		return fmt.Errorf("%w: extent reaches past chunk %x", ErrCorrupt, p.Hash[:8])
	}
	copy(dst, data[p.ChunkOff:p.ChunkOff+p.Length])
	return nil
}

// readInto reads uncompressed chunk h, whose record is c, into dst
// (len(dst) == c.Raw) and verifies it.
func (e *Engine) readInto(h schema.Hash, c schema.Chunk, dst []byte) error {
	loc := chunkLoc(c)
	if _, err := e.blobs.Read(loc, dst); err != nil {
		return &ChunkError{Hash: h, Loc: loc, Err: fmt.Errorf("%w: %v", ErrCorrupt, err)}
	}
	if e.cfg.VerifyReads && !intact(h, c, dst) {
		return &ChunkError{Hash: h, Loc: loc, Err: fmt.Errorf("%w: bytes fail their check", ErrCorrupt)}
	}
	return nil
}

// intact reports whether raw, read for chunk h whose record is c, is that
// chunk's content: by the record's check (schema.Chunk.Check) where it
// has one, else, or if the check fails, by the hash. Bytes that fail the
// check are nearly always damaged, and the hash then says so too; but a
// damaged check must not make intact data unreadable.
func intact(h schema.Hash, c schema.Chunk, raw []byte) bool {
	if c.HasCheck && schema.CheckSum(raw) == c.Check {
		return true
	}
	return schema.Sum(raw) == h
}

// ChunkError says which chunk could not be loaded and where it is stored,
// so that a log line can name it. It wraps ErrCorrupt when the stored
// bytes or the chunk's record are damaged or missing.
type ChunkError struct {
	Hash schema.Hash
	Loc  blob.Loc // zero when the chunk's record could not be read
	Err  error
}

func (e *ChunkError) Error() string {
	if e.Loc.Segment == 0 {
		return fmt.Sprintf("chunk %x: %v", e.Hash, e.Err)
	}
	return fmt.Sprintf("chunk %x (segment %d, offset %d, %d bytes): %v", e.Hash, e.Loc.Segment, e.Loc.Offset, e.Loc.Length, e.Err)
}

func (e *ChunkError) Unwrap() error { return e.Err }

// RecordError says which inode a metadata record that could not be
// decoded belongs to, so that a log line can name the file.
type RecordError struct {
	Ino    uint64
	Record string // "inode", "extent", "directory entry \"x\"", ...
	Err    error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("inode %d: damaged %s record: %v", e.Ino, e.Record, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// loadChunk reads, decompresses and verifies a chunk from the blob store.
func (e *Engine) loadChunk(h schema.Hash) ([]byte, error) {
	c, cached, err := e.chunkRecord(h)
	if err != nil {
		return nil, err
	}
	raw, err := e.loadFrom(h, c)
	if err != nil && cached {
		// Perhaps a record gone stale: ask the store.
		e.locs.c.Remove(h)
		if c, _, err = e.chunkRecord(h); err == nil {
			raw, err = e.loadFrom(h, c)
		}
	}
	return raw, err
}

// loadFrom loads chunk h from where its record c says.
func (e *Engine) loadFrom(h schema.Hash, c schema.Chunk) ([]byte, error) {
	loc := chunkLoc(c)
	stored, err := e.blobs.Read(loc, make([]byte, c.Stored))
	if err != nil {
		return nil, &ChunkError{Hash: h, Loc: loc, Err: fmt.Errorf("%w: %v", ErrCorrupt, err)}
	}
	raw, err := e.comp.decompress(stored, c.Comp, int(c.Raw))
	if err != nil {
		return nil, &ChunkError{Hash: h, Loc: loc, Err: err}
	}
	if e.cfg.VerifyReads && !intact(h, c, raw) {
		return nil, &ChunkError{Hash: h, Loc: loc, Err: fmt.Errorf("%w: bytes fail their check", ErrCorrupt)}
	}
	return raw, nil
}

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
	pos := off
	err := scanExtents(r, ino, off, math.MaxInt64, func(p Piece) error {
		if p.Off > pos {
			return io.EOF
		}
		pos = max(pos, p.End())
		return nil
	})
	if err == io.EOF {
		err = nil
	}
	return pos, err
}
