package content

import (
	"errors"
	"fmt"
	"math"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Repairs for doppel fsck. They change what normal operation never needs
// to touch directly (refcounts, extents whose chunk is gone, the counters),
// and they go through the transaction's deltas so that the stats record
// stays exact and freed chunks take the normal path: a free record in the
// same batch, punched once the deletion is durable.

// AdjustStats adds d to the volume's counters at commit. Every transaction
// changes the counters by deltas, so an error in the stats record stays
// the same however many correct transactions follow: fsck corrects it by
// the difference it counted, even while the volume is in use.
func (t *Tx) AdjustStats(d schema.Stats) {
	t.delta.LogicalBytes += d.LogicalBytes
	t.delta.PhysicalBytes += d.PhysicalBytes
	t.delta.RawBytes += d.RawBytes
	t.delta.Chunks += d.Chunks
	t.delta.Inodes += d.Inodes
	t.delta.OwnedBlocks += d.OwnedBlocks
}

// DropExtent deletes ino's extent at off, leaving a hole, and takes its
// length (0 for an extent that does not decode) off the logical bytes.
// Unlike Punch it leaves the refcount of the chunk the extent names alone:
// the chunk may have no record, and fsck sets the refcounts of the chunks
// involved to the references left afterwards (CorrectRefs). The caller
// fixes the inode's mapped bytes.
func (t *Tx) DropExtent(ino uint64, off int64, length uint32) error {
	t.delta.LogicalBytes -= int64(length)
	t.extentsChanged(ino, 0, math.MaxInt64) // the extent's length may be unknown
	return t.b.Delete(schema.ExtentKey(ino, off))
}

// DropOwnedExtent deletes ino's extent at off, which owns the block at
// loc (owned.go), and frees the block: nothing else references it.
func (t *Tx) DropOwnedExtent(ino uint64, off int64, loc blob.Loc) error {
	if err := t.DropExtent(ino, off, loc.Length); err != nil {
		return err
	}
	return t.freeOwned(&ownedUse{loc: loc})
}

// ErrChunkChanged is returned by CorrectRefs when chunk h no longer has
// the record the count was made against.
var ErrChunkChanged = errors.New("content: chunk record changed since it was counted")

// CorrectRefs corrects chunk h's refcount, which a view of the volume
// recorded as recorded while held extents referenced the chunk. The
// current refcount changes by held-recorded, which is exact even if
// transactions changed the refcount since the view was taken. A chunk
// left with no reference is freed; punch false frees its record only,
// for a chunk whose location is invalid or shared with another chunk.
//
// The record must still be at seg/off (else ErrChunkChanged): a chunk
// freed and stored again meanwhile starts from a correct count.
func (t *Tx) CorrectRefs(h schema.Hash, seg uint32, off, recorded, held uint64, punch bool) error {
	raw, err := t.b.Get(schema.ChunkKey(h))
	if errors.Is(err, meta.ErrNotFound) {
		return ErrChunkChanged
	}
	if err != nil {
		return err
	}
	c, err := schema.DecodeChunk(raw)
	if err != nil {
		return fmt.Errorf("chunk %s: %w", h.Short(), err)
	}
	if c.Segment != seg || c.Offset != off {
		return ErrChunkChanged
	}
	refs := int64(c.Refs) + int64(held) - int64(recorded)
	switch {
	case refs < 0:
		return fmt.Errorf("%w: chunk %s: refcount %d corrected by %d", ErrChunkChanged, h.Short(), c.Refs, int64(held)-int64(recorded))
	case refs == 0:
		return t.free(h, c, punch)
	}
	c.Refs = uint64(refs)
	return t.b.Set(schema.ChunkKey(h), c.Encode())
}
