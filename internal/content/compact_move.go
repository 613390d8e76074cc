package content

import (
	"errors"
	"fmt"
	"os"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// How a compaction pass moves chunks without racing the write path.
//
// A chunk may be stored into a pack by Prepare and named by a record only
// when its transaction commits, later. So a pack's records are not all in
// the chunk table when the pass scans it. The engine therefore marks the
// candidates as compacting (under txMu) before the scan: a transaction
// that creates a record naming one of them afterwards notes the chunk as
// late, and the pass moves late chunks too, in its own transaction. Once
// that commits, the packs count as retired, and a transaction that would
// create a record naming a retired pack stores the chunk again instead
// (its bytes are still at hand until the commit).

// packState is what compaction is doing with a pack.
type packState uint8

const (
	packCompacting packState = iota + 1
	packRetired
)

// beginCompacting marks segs as compacting.
func (e *Engine) beginCompacting(segs []blob.SegmentUse) {
	e.txMu.Lock()
	defer e.txMu.Unlock()
	if e.packStates == nil {
		e.packStates = map[uint32]packState{}
	}
	for _, s := range segs {
		e.packStates[s.Num] = packCompacting
	}
	e.late = nil
}

// endCompacting forgets the marks of segs that did not get retired.
func (e *Engine) endCompacting(segs []blob.SegmentUse) {
	e.txMu.Lock()
	defer e.txMu.Unlock()
	for _, s := range segs {
		if e.packStates[s.Num] == packCompacting {
			delete(e.packStates, s.Num)
		}
	}
	e.late = nil
}

// placeNewChunk is called (under txMu) for a chunk whose record a
// transaction creates, naming where p was stored: a chunk in a retired
// pack is stored again, one in a pack being compacted is noted as late.
// Retired packs are remembered for the engine's life (4 bytes and a map
// entry each): a Prepare may name one long after it was deleted.
func (t *Tx) placeNewChunk(p *Prepared) error {
	switch t.e.packStates[p.loc.Segment] {
	case packRetired:
		if err := t.e.store(p); err != nil {
			return err
		}
		t.adopted[p] = struct{}{} // so that an abort frees it
	case packCompacting:
		t.e.late = append(t.e.late, p.Hash)
	}
	return nil
}

// afterCompactScan lets a test commit a transaction between a pass's
// scan and its move (a late chunk); nil in production.
var afterCompactScan func()

// compact moves the live chunks of segs into new packs and retires segs.
// It returns the chunks and stored bytes moved and the packs retired.
func (e *Engine) compact(store blob.Compactable, segs []blob.SegmentUse) (int, int64, int, error) {
	e.beginCompacting(segs)
	defer e.endCompacting(segs)
	moves, err := e.liveChunksOf(segs)
	if err != nil {
		return 0, 0, 0, err
	}
	if afterCompactScan != nil {
		afterCompactScan()
	}
	var all []chunkMove
	var locs []blob.Loc
	var ok []blob.SegmentUse
	for _, s := range segs {
		l, err := e.copyOut(store, s.Num, moves[s.Num])
		if err != nil {
			var ce *ChunkError
			if errors.As(err, &ce) {
				e.log.Error("compaction: pack left as it is; fsck reports the damage", "pack", s.Num, "err", err)
				continue
			}
			e.discardCopies(locs)
			return 0, 0, 0, err
		}
		all, locs, ok = append(all, moves[s.Num]...), append(locs, l...), append(ok, s)
	}
	// Ordered mode: the copies are in the store before a record names them.
	if err := e.blobs.Sync(); err != nil {
		e.discardCopies(locs)
		return 0, 0, 0, err
	}
	moved, bytes, err := e.repointAll(store, ok, all, locs)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, s := range ok {
		// A pack that all its chunks' frees emptied meanwhile is gone already.
		if err := store.Retire(s.Num); err != nil && !errors.Is(err, os.ErrNotExist) {
			return moved, bytes, 0, err
		}
	}
	return moved, bytes, len(ok), nil
}

// discardCopies frees copies no record can name: the pass failed before
// its transaction began.
func (e *Engine) discardCopies(locs []blob.Loc) {
	for _, l := range locs {
		e.freeNow(l)
	}
}

// repointAll commits the moves, and those of late chunks, in one
// transaction; once it commits, segs count as retired.
func (e *Engine) repointAll(store blob.Compactable, segs []blob.SegmentUse, moves []chunkMove, locs []blob.Loc) (int, int64, error) {
	tx, err := e.Begin()
	if err != nil {
		e.discardCopies(locs)
		return 0, 0, err
	}
	lateMoves, lateLocs, err := e.copyLate(store, tx, segs, moves)
	if err != nil {
		tx.Abort()
		e.discardCopies(locs)
		return 0, 0, err
	}
	moves, locs = append(moves, lateMoves...), append(locs, lateLocs...)
	var n int
	var bytes int64
	for i, m := range moves {
		moved, err := tx.repoint(m, locs[i])
		if err != nil {
			tx.Abort()
			e.discardCopies(locs)
			return 0, 0, err
		}
		if moved {
			n++
			bytes += int64(m.rec.Stored)
		}
	}
	tx.OnCommitLocked(func() {
		for _, s := range segs {
			e.packStates[s.Num] = packRetired
		}
	})
	if err := tx.Commit(true); err != nil {
		// The outcome may be unknown (a connection lost during commit):
		// the copies stay, and a sweep of a later session finds them.
		return 0, 0, err
	}
	for _, m := range moves {
		e.locs.c.Remove(m.hash)
	}
	return n, bytes, nil
}

// copyLate copies the chunks that transactions recorded in segs after
// the scan (tx holds txMu, so no more can come) and makes them durable.
func (e *Engine) copyLate(store blob.Compactable, tx *Tx, segs []blob.SegmentUse, have []chunkMove) ([]chunkMove, []blob.Loc, error) {
	if len(e.late) == 0 {
		return nil, nil, nil
	}
	in := map[uint32]bool{}
	for _, s := range segs {
		in[s.Num] = true
	}
	seen := map[schema.Hash]bool{}
	for _, m := range have {
		seen[m.hash] = true
	}
	bySeg := map[uint32][]chunkMove{}
	for _, h := range e.late {
		raw, err := tx.b.Get(schema.ChunkKey(h))
		if errors.Is(err, meta.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		c, err := schema.DecodeChunk(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("chunk %s: %w", h.Short(), err)
		}
		if in[c.Segment] && !seen[h] {
			seen[h] = true
			bySeg[c.Segment] = append(bySeg[c.Segment], chunkMove{hash: h, rec: c})
		}
	}
	var moves []chunkMove
	var locs []blob.Loc
	for num, ms := range bySeg {
		l, err := e.copyOut(store, num, ms)
		if err != nil {
			e.discardCopies(locs)
			return nil, nil, err
		}
		moves, locs = append(moves, ms...), append(locs, l...)
	}
	if err := e.blobs.Sync(); err != nil {
		e.discardCopies(locs)
		return nil, nil, err
	}
	return moves, locs, nil
}

// copyOut reads pack num once and stores copies of the chunks of moves,
// each checked first, so that compaction never copies damage.
func (e *Engine) copyOut(store blob.Compactable, num uint32, moves []chunkMove) ([]blob.Loc, error) {
	if len(moves) == 0 {
		return nil, nil
	}
	data, err := store.ReadSegment(num)
	if err != nil {
		return nil, err
	}
	stored := make([][]byte, len(moves))
	for i, m := range moves {
		if stored[i], err = e.verifiedStored(data, m); err != nil {
			return nil, err
		}
	}
	return e.blobs.PutMany(stored)
}

// verifiedStored cuts chunk m's stored bytes out of its pack's data and
// checks them against the chunk's record.
func (e *Engine) verifiedStored(data []byte, m chunkMove) ([]byte, error) {
	loc := chunkLoc(m.rec)
	end := loc.Offset + uint64(loc.Length)
	if end > uint64(len(data)) {
		return nil, e.chunkError(m.hash, loc, fmt.Errorf("%w: past the end of its pack", ErrCorrupt))
	}
	p := data[loc.Offset:end]
	raw, err := e.comp.decompress(p, m.rec.Comp, int(m.rec.Raw))
	if err != nil {
		return nil, e.chunkError(m.hash, loc, err)
	}
	if !intact(m.hash, m.rec, raw) {
		return nil, e.chunkError(m.hash, loc, fmt.Errorf("%w: bytes fail their check", ErrCorrupt))
	}
	return p, nil
}

// repoint makes chunk m's record name to instead of its old location,
// if the record still names the old one; otherwise the copy at to is
// freed once the transaction commits. It reports whether it moved.
func (t *Tx) repoint(m chunkMove, to blob.Loc) (bool, error) {
	key := schema.ChunkKey(m.hash)
	raw, err := t.b.Get(key)
	if errors.Is(err, meta.ErrNotFound) {
		t.dupes = append(t.dupes, to) // freed since the scan
		return false, nil
	}
	if err != nil {
		return false, err
	}
	c, err := schema.DecodeChunk(raw)
	if err != nil {
		return false, fmt.Errorf("chunk %s: %w", m.hash.Short(), err)
	}
	if c.Segment != m.rec.Segment || c.Offset != m.rec.Offset {
		t.dupes = append(t.dupes, to) // freed and stored again elsewhere
		return false, nil
	}
	c.Segment, c.Offset = to.Segment, to.Offset
	return true, t.b.Set(key, c.Encode())
}
