package content

import (
	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/schema"
)

// Location hints (docs/BLOCK.md, "Location hints"): an extent written
// over a whole, uncompressed chunk remembers where the chunk was stored
// and its check, so that a verified read goes straight to the bytes
// instead of looking up the chunk's record first (about 4.5 µs a record
// in Pebble: a quarter to a third of the CPU of an export's sequential
// read of 4 KiB blocks).
//
// The chunk record stays the truth. A hint goes stale when the copy a
// write stored loses to another copy of the same bytes, when a chunk a
// write found held is freed and stored again before the commit, or when
// compaction moves the chunk to another pack (stores that are
// blob.Compactable). A stale hint's bytes fail the check, or its segment
// is gone, and the read falls back to the record. A compacted pack is
// retired and deleted only after a grace period; until then its bytes
// are still the chunk's. Once it is deleted, the store tells so
// (blob.GoneTeller: it deleted the pack, or a read found it missing), and
// hints into it are passed over without asking for it again. Hints are
// written and used only while reads are verified: an unverified read
// cannot tell a stale hint from the chunk.
//
// On an S3 store, hints spare a sequential read the lookups of its chunks'
// records (a PostgreSQL query per window and the record cache's work).

// usesHints says whether the engine writes and trusts location hints.
func usesHints(cfg Config) bool { return cfg.VerifyReads }

// movesChunks says whether b's compaction moves chunks between segments.
func movesChunks(b blob.Store) bool {
	_, moves := b.(blob.Compactable)
	return moves
}

// hintOf is the hint for an extent of chunk p: where p's bytes are stored
// whole and uncompressed, as found by its dedup lookup (held: with
// deferred dedup the copy this write stored meanwhile is then freed at
// the commit) or else as this write stored them.
func (e *Engine) hintOf(p *Prepared) schema.Hint {
	if !e.hints || p == nil {
		return schema.Hint{}
	}
	if p.held.Has() {
		return p.held
	}
	if p.inline != nil || p.comp != schema.CompNone || p.loc.Segment == 0 || int(p.loc.Length) != p.Len {
		return schema.Hint{}
	}
	return schema.Hint{Segment: p.loc.Segment, Offset: p.loc.Offset, Check: p.check}
}

// noteHeld remembers, as p's hint, where the record rec that a dedup
// lookup found says p's bytes are, if they are stored whole and
// uncompressed.
func (e *Engine) noteHeld(p *Prepared, rec []byte) {
	if !e.hints {
		return
	}
	c, err := schema.DecodeChunk(rec)
	if err != nil || !storedWhole(c, uint32(p.Len)) {
		return
	}
	p.held = schema.Hint{Segment: c.Segment, Offset: c.Offset, Check: p.check}
}

// hintedLoc returns where piece p's chunk lies whole by p's hint, if the
// engine trusts hints and p has one (clip drops the hint of a piece that
// is no longer a whole chunk).
func (e *Engine) hintedLoc(p Piece) (blob.Loc, bool) {
	if !e.trusts(p.Hint) || p.ChunkOff != 0 {
		return blob.Loc{}, false
	}
	return blob.Loc{Segment: p.Hint.Segment, Offset: p.Hint.Offset, Length: p.Length}, true
}

// trusts reports whether a read may go by hint h: the engine uses hints,
// h is set, and the store does not know its segment to be deleted.
func (e *Engine) trusts(h schema.Hint) bool {
	return e.hints && h.Has() && (e.gone == nil || !e.gone.Gone(h.Segment))
}

// wholeChunkHint returns where p's whole chunk lies by a location hint,
// its check and whether there is one: p's own hint, or for a piece a read
// clipped out of a hinted extent, that extent's (Piece.whole). Such a
// chunk can be loaded without looking its record up.
func (e *Engine) wholeChunkHint(p Piece) (blob.Loc, uint64, bool) {
	if loc, ok := e.hintedLoc(p); ok {
		return loc, p.Hint.Check, true
	}
	return e.clippedHint(p)
}

// clippedHint is wholeChunkHint for a piece a read clipped out of a
// hinted extent only.
func (e *Engine) clippedHint(p Piece) (blob.Loc, uint64, bool) {
	w := p.whole
	if !e.trusts(w.hint) {
		return blob.Loc{}, 0, false
	}
	return blob.Loc{Segment: w.hint.Segment, Offset: w.hint.Offset, Length: w.length}, w.hint.Check, true
}

// loadHinted loads chunk h whole through a location hint (loc, check),
// or, if its bytes fail the check or cannot be read, by its record.
func (e *Engine) loadHinted(h schema.Hash, loc blob.Loc, check uint64) ([]byte, error) {
	if data, err := e.blobs.Read(loc, make([]byte, loc.Length)); err == nil && schema.CheckSum(data) == check {
		return data, nil
	}
	return e.loadChunk(h)
}
