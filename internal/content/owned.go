package content

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Owned blocks (docs/BLOCK.md, "Owned blocks"). A new block of a disk
// image (a file cut in 4 KiB blocks: an exported file, a VM disk) whose
// bytes the chunk table does not hold is written owned: its extent carries its
// location and check (schema.Extent.Owned) and the chunk table gets no
// record. An overwrite then drops it without reading or deleting a
// record, and writing it wrote one record (the extent), not two.
//
// The rule that keeps counts exact: an owned extent counts in the
// refcount of the record of its hash if and only if that record names
// the extent's own location. Otherwise it is the one reference to its
// bytes. So:
//
//   - an owned extent is only ever made by the write that stored its
//     bytes; every other reference to them (a copy, cp, a clone, the part
//     of a block a punch leaves, a version a pin retains) is an ordinary
//     extent, and the transaction that makes the first such reference
//     gives the bytes a record at their location ("promotes" them), whose
//     refcount counts the owner too, unless the table holds the hash
//     already (the copy then counts there, its hint goes stale once the
//     owned bytes go, and reads fall back to the record);
//   - dropping an owned extent frees its bytes unless a record names
//     them. The dedup filter (dedupfilter.go) answers "no record" from
//     memory for nearly every such drop.
//
// Bytes that are not in the chunk table are not found by dedup lookups:
// new writes do not share an owned block's bytes (dedup of owned blocks
// among themselves is left to a later pass). Owned blocks count in the
// volume's physical and raw bytes and in schema.Stats.OwnedBlocks, not in
// its chunk count (records).

// ownedUse is what one transaction does with the references to one owned
// block.
type ownedUse struct {
	hash  schema.Hash
	loc   blob.Loc
	check uint64
	fresh *Prepared // written by this transaction (nil: owned before it)
	// owners counts owner extents the transaction put (+1: only the
	// write that stored the block) and dropped (-1).
	owners int
	// copies counts ordinary references the transaction made to the
	// block's bytes.
	copies int
}

// ownerCount is how many owner extents the block has once the
// transaction commits: 0 or 1 in a sound volume.
func (u *ownedUse) ownerCount() int {
	if u.fresh != nil {
		return u.owners
	}
	return 1 + u.owners
}

// usesOwnedBlocks says whether disk images' new blocks are written owned: only where extents carry hints (reads trust them), chunks stay
// where they were stored (no compaction moves them), and this process
// alone writes the metadata.
func usesOwnedBlocks(cfg Config, b blob.Store) bool {
	return cfg.OwnedBlocks && usesHints(cfg) && !movesChunks(b) && !cfg.OtherWriters && !cfg.DeferDedup
}

// WritesOwnedBlocks reports whether the engine writes disk images' new
// blocks owned (usesOwnedBlocks).
func (e *Engine) WritesOwnedBlocks() bool { return e.owned }

// ownedLoc returns the location and check of the block piece p's bytes
// belong to if that block is owned: p's own, or for a piece clipped out
// of an owned extent, that extent's.
func ownedLoc(p Piece) (blob.Loc, uint64, bool) {
	switch {
	case p.Owned && p.Hint.Has() && p.ChunkOff == 0:
		return blob.Loc{Segment: p.Hint.Segment, Offset: p.Hint.Offset, Length: p.Length}, p.Hint.Check, true
	case p.whole.owned:
		w := p.whole
		return blob.Loc{Segment: w.hint.Segment, Offset: w.hint.Offset, Length: w.length}, w.hint.Check, true
	}
	return blob.Loc{}, 0, false
}

// ownedUseOf returns the transaction's use of the owned block at loc.
func (t *Tx) ownedUseOf(h schema.Hash, loc blob.Loc, check uint64) *ownedUse {
	k := blob.Loc{Segment: loc.Segment, Offset: loc.Offset}
	if t.owned == nil {
		t.owned = map[blob.Loc]*ownedUse{}
	}
	u := t.owned[k]
	if u == nil {
		// From slabs that double up to 1024 uses: one allocation per
		// block was a tenth of a fresh disk image copy's allocations.
		if len(t.ownedSlab) == 0 {
			t.ownedSlab = make([]ownedUse, min(max(2*len(t.owned), 16), 1024))
		}
		u, t.ownedSlab = &t.ownedSlab[0], t.ownedSlab[1:]
		*u = ownedUse{hash: h, loc: loc, check: check}
		t.owned[k] = u
	}
	return u
}

// ownsFresh reports whether new chunk c, about to be referenced by an
// extent, is written owned: a whole block of a disk image that this write
// stored, uncompressed, and that the transaction references nowhere
// else yet.
func (t *Tx) ownsFresh(c *Prepared) bool {
	return t.e.owned && c.ownable && c.written && c.inline == nil && c.comp == schema.CompNone &&
		c.loc.Segment != 0 && int(c.loc.Length) == c.Len && !c.held.Has() && t.fresh[c.Hash] == nil
}

// putOwned stores the owner extent of new block c.
func (t *Tx) putOwned(ino uint64, c *Prepared) error {
	c.owned = true
	u := t.ownedUseOf(c.Hash, c.loc, c.check)
	u.fresh = c
	u.owners++
	return t.putOwnerExtent(ino, c)
}

// putOwnerExtent stores the extent that owns c's block at ino, and keeps
// c as the transaction's owned copy of its bytes.
func (t *Tx) putOwnerExtent(ino uint64, c *Prepared) error {
	t.keepOwnedFresh(c)
	t.extentsChanged(ino, c.Off, c.Off+int64(c.Len))
	x := ownedExtentOf(c)
	return t.setExtent(ino, c.Off, &x)
}

// keepOwnedFresh makes c the transaction's owned copy of its bytes, which
// later chunks with the same bytes reference.
func (t *Tx) keepOwnedFresh(c *Prepared) {
	if t.ownedFresh == nil {
		t.ownedFresh = make(map[schema.Hash]*Prepared, t.ownedHint)
	}
	t.ownedFresh[c.Hash] = c
}

// ownedExtentOf is the owner extent of the block new chunk p is written
// into (put, given it for another place with the same bytes, makes that
// an ordinary reference).
func ownedExtentOf(p *Prepared) schema.Extent {
	return schema.Extent{Hash: p.Hash, Length: uint32(p.Len), Owned: true,
		Hint: schema.Hint{Segment: p.loc.Segment, Offset: p.loc.Offset, Check: p.check}}
}

// ref counts a new reference to piece p's chunk: an ordinary one, also
// when p's bytes are an owned block (see above). It returns p's extent as
// it is stored.
func (t *Tx) ref(p Piece) schema.Extent {
	if loc, check, ok := ownedLoc(p); ok {
		t.ownedUseOf(p.Hash, loc, check).copies++
		p.Owned = false
		return p.Extent
	}
	t.refs[p.Hash]++
	return p.Extent
}

// unref counts the drop of whole extent p.
func (t *Tx) unref(p Piece) {
	if loc, check, ok := ownedLoc(p); ok && p.Owned {
		t.ownedUseOf(p.Hash, loc, check).owners--
		return
	}
	t.refs[p.Hash]--
}

// RefExtent changes the references of extent x's chunk by d when the
// transaction commits: a caller that keeps a copy of an extent (a clone,
// a retained version) references its chunk again, and one that drops such
// a copy lets go of it. A kept copy of an owned extent is an ordinary
// reference (schema.Unowned).
func (t *Tx) RefExtent(x schema.Extent, d int64) {
	p := Piece{Extent: x}
	if _, _, ok := ownedLoc(p); ok {
		for ; d > 0; d-- {
			t.ref(p)
		}
		for ; d < 0; d++ {
			t.unref(p)
		}
		return
	}
	t.refs[x.Hash] += d
}

// resolveOwned settles, before the refcounts are applied, what the
// transaction did with owned blocks: a block whose owner went and that
// nothing else references is freed, one that gained ordinary references
// gets a record at its location, and references to bytes whose hash has
// a record elsewhere count there.
func (t *Tx) resolveOwned() error {
	if len(t.owned) == 0 {
		return nil
	}
	uses := slices.SortedFunc(maps.Values(t.owned), func(a, b *ownedUse) int {
		return cmp.Or(bytes.Compare(a.hash[:], b.hash[:]), cmp.Compare(a.loc.Segment, b.loc.Segment), cmp.Compare(a.loc.Offset, b.loc.Offset))
	})
	recs, err := t.ownedRecords(uses)
	if err != nil {
		return err
	}
	for len(uses) > 0 {
		n := 1
		for n < len(uses) && uses[n].hash == uses[0].hash {
			n++
		}
		rec, has := recs[uses[0].hash]
		if err := t.resolveHash(uses[:n], rec, has); err != nil {
			return err
		}
		uses = uses[n:]
	}
	return nil
}

// resolveHash is resolveOwned for the owned blocks of one hash (usually
// one block), whose record is rec if has.
func (t *Tx) resolveHash(uses []*ownedUse, rec schema.Chunk, has bool) error {
	h := uses[0].hash
	for _, u := range uses {
		if n := u.ownerCount(); n < 0 || n > 1 {
			return fmt.Errorf("%w: block %s at segment %d offset %d would have %d owner extents", ErrCorrupt, h.Short(), u.loc.Segment, u.loc.Offset, n)
		}
	}
	// The ordinary references made to these blocks' bytes in this
	// transaction and still there at its end: before it there were none
	// unless the chunk table holds the hash (they would count there).
	copies := t.refs[h]
	for _, u := range uses {
		copies += int64(u.copies)
	}
	var keeper *ownedUse // the block that gets a record, if one must
	switch {
	case has || t.createsRecord(h):
		t.refs[h] = copies // they count in the record
	case copies < 0:
		return fmt.Errorf("%w: block %s: %d references dropped that were never made", ErrCorrupt, h.Short(), -copies)
	case copies == 0:
		delete(t.refs, h)
	default:
		keeper = uses[0] // any: they hold the same bytes; an owned one if there is
		for _, u := range uses {
			if u.ownerCount() == 1 {
				keeper = u
				break
			}
		}
	}
	for _, u := range uses {
		n := u.ownerCount()
		switch {
		case has && !rec.IsInline() && rec.Segment == u.loc.Segment && rec.Offset == u.loc.Offset:
			t.refs[h] += int64(u.owners) // promoted before: the owner counts in the record
		case u == keeper:
			t.promote(u, copies+int64(n))
		case n == 1 && u.fresh != nil:
			if err := t.keepFreshOwned(u); err != nil {
				return err
			}
		case n == 1:
		case u.fresh != nil:
			t.dupes = append(t.dupes, u.loc) // written and dropped in this transaction
		default:
			if err := t.freeOwned(u); err != nil {
				return err
			}
		}
	}
	return nil
}

// ownedRecords returns the chunk records of the hashes of uses, except of
// those the dedup filter says the table lacks.
func (t *Tx) ownedRecords(uses []*ownedUse) (map[schema.Hash]schema.Chunk, error) {
	f := t.e.lookupFilter()
	var ask []schema.Hash
	var keys [][]byte
	for _, u := range uses {
		if (f == nil || f.mayHold(u.hash)) && (len(ask) == 0 || ask[len(ask)-1] != u.hash) {
			ask = append(ask, u.hash)
			keys = append(keys, schema.ChunkKey(u.hash))
		}
	}
	out := map[schema.Hash]schema.Chunk{}
	if len(ask) == 0 {
		return out, nil
	}
	recs, err := getRecords(t.reads, keys)
	if err != nil {
		return nil, err
	}
	for i, rec := range recs {
		if rec == nil {
			continue
		}
		c, err := schema.DecodeChunk(rec)
		if err != nil {
			return nil, fmt.Errorf("chunk %s: %w", ask[i].Short(), err)
		}
		out[ask[i]] = c
	}
	return out, nil
}

// createsRecord reports whether the transaction will create chunk h's
// record from a new chunk it stored (applyRef).
func (t *Tx) createsRecord(h schema.Hash) bool {
	p := t.fresh[h]
	return p != nil && !p.owned && t.refs[h] > 0
}

// promote gives owned block u a record at its location with refs
// references, which applyRefs writes: the block's bytes stay where they
// are and are counted in the volume's bytes already (for a block new in
// this transaction, from here).
//
// A block written in place since the last Sync (an intent record covers
// its zone) holds bytes only that record makes safe: after a crash,
// recovery takes the owned blocks of the zone as it finds them, but not a
// chunk with a record, which other files may share. So while any zone
// has a record, the commit that promotes makes every byte durable first
// (TestPowerLossInPlace: a block written in place, then the same bytes
// written to another block, read as damaged after a power loss).
func (t *Tx) promote(u *ownedUse, refs int64) {
	if t.e.inPlace && t.e.intents.pending() {
		t.promotesUnsettled = true
	}
	c := schema.Chunk{Segment: u.loc.Segment, Offset: u.loc.Offset, Stored: u.loc.Length, Raw: u.loc.Length,
		Check: u.check, HasCheck: true}
	if t.promoted == nil {
		t.promoted = map[schema.Hash][]byte{}
	}
	t.promoted[u.hash] = c.Encode() // refcount 0: applyRef adds refs
	t.refs[u.hash] = refs
	t.created = append(t.created, u.hash)
	t.delta.Chunks++ // a record now; its bytes were counted when written
	if u.fresh != nil {
		t.countStored(u.loc)
		t.claimOwned(u.fresh)
	} else {
		t.delta.OwnedBlocks--
	}
}

// keepFreshOwned counts owned block u, new in this transaction, in the
// volume's stats (and in schema.KeyOwnedUnshared, at commit).
func (t *Tx) keepFreshOwned(u *ownedUse) error {
	t.countStored(u.loc)
	t.delta.OwnedBlocks++
	t.keptOwned++
	return t.claimOwned(u.fresh)
}

// countStored adds a stored block's bytes to the stats.
func (t *Tx) countStored(loc blob.Loc) {
	t.delta.PhysicalBytes += int64(loc.Length)
	t.delta.RawBytes += int64(loc.Length)
}

// claimOwned is claimSlot for a new owned block.
func (t *Tx) claimOwned(p *Prepared) error {
	if t.e.slots == nil || !t.e.slots.ClaimSlot(p.loc) {
		return nil
	}
	return t.b.Delete(schema.FreeKey(p.loc.Segment, p.loc.Offset))
}

// freeOwned frees owned block u, whose last reference went: as t.free,
// without a record to delete.
func (t *Tx) freeOwned(u *ownedUse) error {
	t.delta.PhysicalBytes -= int64(u.loc.Length)
	t.delta.RawBytes -= int64(u.loc.Length)
	t.delta.OwnedBlocks--
	t.freed = append(t.freed, u.loc)
	return t.b.Set(schema.FreeKey(u.loc.Segment, u.loc.Offset), schema.FreeValue(u.loc.Length))
}

// errNotOwned says that a piece is not an owned block (readOwned).
var errNotOwned = errors.New("not an owned block")

// readOwned reads owned piece p's bytes into dst from its location, where
// they are the truth. It fails with errNotOwned (and a zero location) if
// p is not owned, else with why the bytes could not be had: the caller
// then tries the record of p's hash, which may name another copy of the
// same bytes.
func (e *Engine) readOwned(p Piece, dst []byte) (blob.Loc, error) {
	loc, ok := e.hintedLoc(p)
	if !ok || !p.Owned {
		return blob.Loc{}, errNotOwned
	}
	e.counters.cacheMiss.Add(1)
	if _, err := e.blobs.Read(loc, dst); err != nil {
		return loc, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if schema.CheckSum(dst) != p.Hint.Check {
		return loc, fmt.Errorf("%w: bytes fail their check", ErrCorrupt)
	}
	return loc, nil
}

// ownedSpans adds to live the blocks in segments [first, end) that owned
// extents own: recovery must not punch them as orphans, since no chunk
// record names them. A volume that may hold owned blocks
// (Config.OwnedBlocks) pays a walk of every extent for it.
func (e *Engine) ownedSpans(first, end uint32, align int64, live map[uint32][]blob.Span) error {
	if !e.cfg.OwnedBlocks {
		return nil
	}
	return eachOwnedExtent(e.meta, func(key []byte, x schema.Extent, derr error) error {
		if derr != nil {
			// Its block is not known: punching could destroy it.
			return fmt.Errorf("extent %x: %w", key, derr)
		}
		if s := x.Hint.Segment; s >= first && s < end {
			loc := blob.Loc{Segment: s, Offset: x.Hint.Offset, Length: x.Length}
			live[s] = append(live[s], blob.SpanAt(loc, align))
		}
		return nil
	})
}

// eachOwnedExtent calls fn for every owned extent r holds, with its key
// (valid during the call) and its record decoded or why it does not
// decode; an error from fn ends the walk with it. Other extents are
// passed over undecoded.
func eachOwnedExtent(r meta.Reader, fn func(key []byte, x schema.Extent, derr error) error) error {
	it, err := r.NewIter([]byte{'e'}, []byte{'e' + 1})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		v := it.Value()
		if len(v) == 0 || v[0] != schema.ExtentFormatOwned {
			continue
		}
		x, derr := schema.DecodeExtent(v)
		if err := fn(it.Key(), x, derr); err != nil {
			return err
		}
	}
	return it.Error()
}
