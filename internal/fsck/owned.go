package fsck

import (
	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/schema"
)

// ownedBlock is a block an extent owns (docs/BLOCK.md, "Owned blocks"):
// no chunk record names its place, and the extent is its one reference.
type ownedBlock struct {
	hash   schema.Hash
	length uint32
	check  uint64
	ino    uint64 // the owner
	off    int64
}

// namesPlaceOf reports whether chunk record ch names the place owned
// extent x owns: the extent then counts in its refcount like any other.
func namesPlaceOf(ch *chunk, x schema.Extent) bool {
	return ch != nil && !ch.bad && !ch.rec.IsInline() && ch.rec.Segment == x.Hint.Segment && ch.rec.Offset == x.Hint.Offset
}

// ownedExtent checks owned extent x of run r's inode at off: its block
// has no other owner. The block's place and bytes are checked with the
// chunk records' (checkBlobs).
func (c *checker) ownedExtent(r *extentRun, off int64, x schema.Extent) {
	c.rep.OwnedBlocks++
	c.rep.HintedExtents++
	loc := blob.Loc{Segment: x.Hint.Segment, Offset: x.Hint.Offset}
	if o, ok := c.owned[loc]; ok {
		c.report(KindOwnedTwice, r.ino, "extent at %d owns segment %d offset %d, which inode %d's extent at %d owns too",
			off, loc.Segment, loc.Offset, o.ino, o.off)
		return
	}
	c.owned[loc] = ownedBlock{hash: x.Hash, length: x.Length, check: x.Hint.Check, ino: r.ino, off: off}
}

// unsettled reports whether the owned block at c's place lies in a zone
// an intent record names: its bytes may be newer than its extent says.
func (c *checker) unsettled(rec schema.Chunk) bool {
	b, ok := c.owned[blob.Loc{Segment: rec.Segment, Offset: rec.Offset}]
	return ok && c.intents[[2]uint64{b.ino, uint64(b.off) / schema.IntentZoneBytes}]
}

// ownedPlace is the block owned extent x owns.
func ownedPlace(x schema.Extent) blob.Loc {
	return blob.Loc{Segment: x.Hint.Segment, Offset: x.Hint.Offset, Length: x.Length}
}
