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
// write stored loses to another copy of the same bytes, or when a chunk
// a write found held is freed and stored again before the commit; a
// stale hint's bytes fail the check, and the read falls back to the
// record. Hints are written and used only where chunks never move
// (stores that are not blob.Compactable: compaction would leave every
// hint into a retired pack costing a failed GET) and only while reads are
// verified: an unverified read cannot tell a stale hint from the chunk.

// usesHints says whether the engine writes and trusts location hints.
func usesHints(b blob.Store, cfg Config) bool {
	_, moves := b.(blob.Compactable)
	return cfg.VerifyReads && !moves
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
	if !e.hints || !p.Hint.Has() || p.ChunkOff != 0 {
		return blob.Loc{}, false
	}
	return blob.Loc{Segment: p.Hint.Segment, Offset: p.Hint.Offset, Length: p.Length}, true
}
