package content

import (
	"fmt"

	"github.com/doppelfs/doppel/internal/blockhash"
	"github.com/doppelfs/doppel/internal/schema"
)

// After a crash, or a transaction that failed after writing blocks in
// place (inplace.go), an owned block's bytes may be newer than its
// extent says: the write reached the disk, or part of it did, and its
// commit did not. The extent then takes the bytes as they are (their
// hash and check), as a disk keeps whatever of an unflushed write landed.

// recoverIntents checks the owned blocks of every zone an intent record
// names and deletes the records, durably. It runs at every open: a record
// left by a clean close costs only its zone's check.
func (e *Engine) recoverIntents(rec *Recovery) error {
	lower, upper := schema.IntentRange()
	it, err := e.meta.NewIter(lower, upper)
	if err != nil {
		return err
	}
	var zones []intentZone
	for ok := it.First(); ok; ok = it.Next() {
		ino, zone, err := schema.DecodeIntentKey(it.Key())
		if err != nil {
			it.Close()
			return fmt.Errorf("intent record %x: %w", it.Key(), err)
		}
		zones = append(zones, intentZone{ino, zone})
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, z := range zones {
		n, err := e.recoverZone(z)
		if err != nil {
			return fmt.Errorf("blocks written in place in inode %d from offset %d: %w", z.ino, z.zone*schema.IntentZoneBytes, err)
		}
		rec.RetakenBlocks += n
		rec.IntentZones++
	}
	return nil
}

// recoverZone retakes the owned blocks of zone z whose bytes fail their
// check and deletes z's intent record, in one synced transaction; it
// returns how many it retook.
func (e *Engine) recoverZone(z intentZone) (int, error) {
	t, err := e.Begin()
	if err != nil {
		return 0, err
	}
	start := int64(z.zone) * schema.IntentZoneBytes
	old, err := extentsOverlapping(t.reads, z.ino, [][2]int64{{start, start + schema.IntentZoneBytes}})
	n := 0
	for _, p := range old {
		if err != nil {
			break
		}
		var took bool
		took, err = t.retakeOwned(z.ino, p)
		if took {
			n++
		}
	}
	if err == nil {
		err = t.raw.Delete(schema.IntentKey(z.ino, z.zone))
	}
	if err != nil {
		t.Abort()
		return 0, err
	}
	return n, t.Commit(true)
}

// repairOverwritten retakes the blocks a failed transaction wrote in
// place (ws).
func (e *Engine) repairOverwritten(ws []overwritten) error {
	t, err := e.Begin()
	if err != nil {
		return err
	}
	for _, w := range ws {
		p, ok, err := extentAt(t.reads, w.ino, w.off)
		if err == nil && ok && p.Hint.Segment == w.loc.Segment && p.Hint.Offset == w.loc.Offset {
			_, err = t.retakeOwned(w.ino, p)
		}
		if err != nil {
			t.Abort()
			return err
		}
	}
	return t.Commit(false)
}

// retakeOwned makes owned extent p of ino (other extents are left alone)
// name its block's bytes as they are, if they fail p's check, and
// reports whether it did. The change bypasses the retainer: a pin never
// had the old bytes once they were overwritten.
func (t *Tx) retakeOwned(ino uint64, p Piece) (bool, error) {
	loc, _, ok := ownedLoc(p)
	if !ok || !p.Owned {
		return false, nil
	}
	data, err := t.e.blobs.Read(loc, nil)
	if err != nil {
		return false, fmt.Errorf("owned block at segment %d offset %d: %w", loc.Segment, loc.Offset, err)
	}
	if schema.CheckSum(data) == p.Hint.Check {
		return false, nil
	}
	sums := make([]schema.Hash, 1)
	blockhash.Sum([][]byte{data}, sums)
	x := p.Extent
	x.Hash, x.Hint.Check = sums[0], schema.CheckSum(data)
	t.keptOwned++ // new bytes, for the dedup pass
	t.extentsChanged(ino, p.Off, p.End())
	if err := t.raw.Set(schema.ExtentKey(ino, p.Off), x.Encode()); err != nil {
		return false, err
	}
	return true, t.Journal(ino, schema.OpData)
}
