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
	end := off + int64(len(buf))
	pos := off // bytes before pos are filled
	err := scanExtents(e.meta, ino, off, end, func(p Piece) error {
		p = p.clip(off, end)
		data, err := e.chunkData(p.Hash)
		if err != nil {
			return fmt.Errorf("read inode %d at %d: %w", ino, p.Off, err)
		}
		if int(p.ChunkOff)+int(p.Length) > len(data) {
			return fmt.Errorf("%w: extent of inode %d at %d reaches past chunk %x", ErrCorrupt, ino, p.Off, p.Hash[:8])
		}
		clear(buf[pos-off : p.Off-off]) // a hole
		copy(buf[p.Off-off:], data[p.ChunkOff:p.ChunkOff+p.Length])
		pos = p.End()
		return nil
	})
	if err != nil {
		return err
	}
	clear(buf[pos-off:])
	e.noteRead(ino, off, end)
	return nil
}

// loadChunk reads, decompresses and verifies a chunk from the blob store.
func (e *Engine) loadChunk(h schema.Hash) ([]byte, error) {
	v, err := e.meta.Get(schema.ChunkKey(h))
	if err != nil {
		return nil, fmt.Errorf("chunk %x: %w", h[:8], err)
	}
	c, err := schema.DecodeChunk(v)
	if err != nil {
		return nil, fmt.Errorf("chunk %x: %w", h[:8], err)
	}
	stored, err := e.blobs.Read(blob.Loc{Segment: c.Segment, Offset: c.Offset, Length: c.Stored}, make([]byte, c.Stored))
	if err != nil {
		return nil, fmt.Errorf("%w: chunk %x: %v", ErrCorrupt, h[:8], err)
	}
	raw, err := e.comp.decompress(stored, c.Comp, int(c.Raw))
	if err != nil {
		return nil, fmt.Errorf("chunk %x: %w", h[:8], err)
	}
	if e.cfg.VerifyReads && schema.Sum(raw) != h {
		return nil, fmt.Errorf("%w: chunk %x in segment %d at %d fails its hash", ErrCorrupt, h[:8], c.Segment, c.Offset)
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
