package content

import (
	"fmt"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/schema"
)

// readInto reads uncompressed chunk h, whose record is c, into dst
// (len(dst) == c.Raw) and verifies it.
func (e *Engine) readInto(h schema.Hash, c schema.Chunk, dst []byte) error {
	loc := chunkLoc(c)
	if _, err := e.blobs.Read(loc, dst); err != nil {
		return e.chunkError(h, loc, fmt.Errorf("%w: %v", ErrCorrupt, err))
	}
	if e.cfg.VerifyReads && !intact(h, c, dst) {
		return e.chunkError(h, loc, fmt.Errorf("%w: bytes fail their check", ErrCorrupt))
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
	// Object names Loc's segment where the store has a name for it
	// (blob.Inspector: a pack's object, s3://BUCKET/KEY); "" for a
	// segment file, which its number names.
	Object string
	Err    error
}

func (e *ChunkError) Error() string {
	switch {
	case e.Loc.Segment == 0:
		return fmt.Sprintf("chunk %x: %v", e.Hash, e.Err)
	case e.Object != "":
		return fmt.Sprintf("chunk %x (%s, offset %d, %d bytes): %v", e.Hash, e.Object, e.Loc.Offset, e.Loc.Length, e.Err)
	}
	return fmt.Sprintf("chunk %x (segment %d, offset %d, %d bytes): %v", e.Hash, e.Loc.Segment, e.Loc.Offset, e.Loc.Length, e.Err)
}

func (e *ChunkError) Unwrap() error { return e.Err }

// chunkError says chunk h, stored at loc, could not be loaded.
func (e *Engine) chunkError(h schema.Hash, loc blob.Loc, err error) *ChunkError {
	ce := &ChunkError{Hash: h, Loc: loc, Err: err}
	if insp, ok := e.blobs.(blob.Inspector); ok && loc.Segment != 0 {
		ce.Object = insp.SegmentName(loc.Segment)
	}
	return ce
}

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
	if err != nil {
		if fresh, ok := e.movedRecord(h, c, cached); ok {
			raw, err = e.loadFrom(h, fresh)
		}
	}
	return raw, err
}

// movedRecord is asked after chunk h could not be read where record c
// says: it returns the chunk's current record if that may name other
// bytes. A cached record may have gone stale (the chunk freed and stored
// again), and compaction may have moved the chunk since c was read and
// deleted the old pack after its grace period.
func (e *Engine) movedRecord(h schema.Hash, c schema.Chunk, cached bool) (schema.Chunk, bool) {
	e.locs.c.Remove(h)
	fresh, _, err := e.chunkRecord(h)
	if err != nil {
		return c, false
	}
	return fresh, cached || fresh.Segment != c.Segment || fresh.Offset != c.Offset
}

// loadFrom loads chunk h from where its record c says.
func (e *Engine) loadFrom(h schema.Hash, c schema.Chunk) ([]byte, error) {
	loc := chunkLoc(c)
	var stored []byte
	var err error
	if c.IsInline() {
		stored = []byte(c.Inline)
	} else {
		stored, err = e.blobs.Read(loc, make([]byte, c.Stored))
	}
	if err != nil {
		return nil, e.chunkError(h, loc, fmt.Errorf("%w: %v", ErrCorrupt, err))
	}
	raw, err := e.comp.decompress(stored, c.Comp, int(c.Raw))
	if err != nil {
		return nil, e.chunkError(h, loc, err)
	}
	if e.cfg.VerifyReads && !intact(h, c, raw) {
		return nil, e.chunkError(h, loc, fmt.Errorf("%w: bytes fail their check", ErrCorrupt))
	}
	return raw, nil
}
