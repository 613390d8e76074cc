package blob

import (
	"fmt"
	"slices"
)

// Overwriter is implemented by stores that can write new bytes over a
// chunk where it lies (segment files; not S3 packs): the content layer
// writes a disk image's block that one extent alone owns over itself
// instead of storing it anew (docs/BLOCK.md, "Owned blocks overwritten
// in place"). The store does not know whether anything still needs the
// old bytes: that is the caller's to know, and to make crash-safe.
//
// Stores that implement it also implement StoredSyncer.
type Overwriter interface {
	// Overwrite writes data[i] over the bytes at locs[i] (the same
	// length, a location a Put returned and nobody freed). A later Sync
	// makes the new bytes durable. On error each location holds its old
	// bytes, its new ones, or some of each.
	Overwrite(locs []Loc, data [][]byte) error
}

// Overwrite writes data over locs, runs of locations side by side in one
// segment with one pwritev each.
func (d *Dir) Overwrite(locs []Loc, data [][]byte) error {
	if len(locs) != len(data) {
		return fmt.Errorf("blob: overwrite: %d locations for %d chunks", len(locs), len(data))
	}
	for i, l := range locs {
		if err := checkLoc(l); err != nil {
			return err
		}
		if int(l.Length) != len(data[i]) {
			return fmt.Errorf("blob: overwrite %+v with %d bytes", l, len(data[i]))
		}
	}
	for start := 0; start < len(locs); {
		end := start + 1
		for end < len(locs) && end-start < maxBatch && locs[end].Segment == locs[start].Segment &&
			locs[end-1].Length == Align && locs[end].Offset == locs[end-1].Offset+Align {
			end++
		}
		if err := d.overwriteRun(locs[start:end], data[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// overwriteRun writes data over locs, which lie side by side in one
// segment, and marks the segment for the next Sync (not SyncStored).
func (d *Dir) overwriteRun(locs []Loc, data [][]byte) error {
	first := locs[0]
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return fmt.Errorf("blob: overwrite: store closed")
	}
	s, err := d.acquire(first.Segment)
	if err != nil {
		d.mu.Unlock()
		return err
	}
	s.pending++
	d.mu.Unlock()
	// A direct write of the same range still in flight would land after
	// this one.
	last := locs[len(locs)-1]
	d.waitWrites(first.Segment, int64(first.Offset), int64(last.Offset)+int64(last.Length))
	_, err = writevAt(s.f, slices.Clone(data), int64(first.Offset)) // it consumes its iovecs
	if err != nil {
		err = fmt.Errorf("blob: overwrite segment %d: %w", first.Segment, err)
	}
	d.finishIn(s, err, true)
	return err
}

// StoredSyncer is implemented by stores whose Sync also makes durable what
// Overwrite wrote: SyncStored makes durable only what was stored (Put and
// its kin), which is all that metadata about to become durable may need.
// Bytes written over in place are left to the next Sync: the caller keeps
// its own record of where they may be unsettled (the content layer's
// intent records), so that syncing them before every metadata flush, and
// stalling the writes in place behind the writeback, buys nothing.
type StoredSyncer interface {
	SyncStored() error
}
