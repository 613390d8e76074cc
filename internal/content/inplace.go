package content

import (
	"errors"
	"fmt"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Owned blocks overwritten in place (docs/BLOCK.md, "Owned blocks
// overwritten in place"). A new block of a disk image that lands exactly
// on an owned block that nothing else references (no record names its
// place, no copy or pin took it in this transaction) is written over
// that block instead of being stored anew: the extent keeps the place and
// gets the new hash and check. No new place, no free record, nothing for
// the reclaimer.
//
// Three rules keep it safe:
//
//   - The decision and the write happen inside the committing
//     transaction (placeInPlace), under the transaction lock: a pin
//     committing between the write and its commit would otherwise retain
//     the old extent, whose bytes are gone. Outside it, PlanInPlace only
//     guesses which chunks will go in place, so that Store need not write
//     them elsewhere first; the transaction checks the guess again.
//   - Before the first in-place write into a zone of a file since the
//     last Sync, a durable intent record names the zone (intents.go).
//     After a crash, recovery takes the owned blocks of those zones whose
//     bytes fail their check as they find them: a write that was not
//     flushed may be lost, in part, as on a disk; nothing flushed changes.
//   - A read that took an extent before the write and read its block
//     after finds bytes that fail the old check: it waits for the
//     transaction and reads again before calling the block damaged
//     (ReadAtFrom).

// usesInPlace says whether owned blocks are overwritten in place: where
// they are written owned, the store can write over a chunk, and commits
// are not durable one by one (those sync each commit's new bytes; this
// path leaves them to Sync and the intent records).
func usesInPlace(cfg Config, b blob.Store, owned bool, durableCommits bool) bool {
	_, ok := b.(blob.Overwriter)
	return owned && cfg.InPlace && ok && !durableCommits
}

// inPlaceTarget is the owned block a new chunk is planned to overwrite,
// as the file's extent named it when planned.
type inPlaceTarget struct {
	ino   uint64
	loc   blob.Loc
	hash  schema.Hash
	check uint64
}

// PlanInPlace marks the chunks about to be written at ino whose range is
// exactly an owned block now: Store leaves them unstored, and the
// transaction that commits them writes them over that block if it still
// may, or stores them then. It reads the extents outside any transaction;
// a failure only means no plan.
func (e *Engine) PlanInPlace(ino uint64, chunks []*Prepared) {
	if !e.inPlace || len(chunks) == 0 {
		return
	}
	// A stream's chunks lie side by side: their extents are read over
	// the whole range, and the transaction may take them from the plan
	// (extent_plan.go). Others are read where blocks may go in place.
	contiguous := true
	for i := 1; i < len(chunks); i++ {
		contiguous = contiguous && chunks[i].Off == chunks[i-1].Off+int64(chunks[i-1].Len)
	}
	var ranges [][2]int64
	if last := chunks[len(chunks)-1]; contiguous {
		ranges = [][2]int64{{chunks[0].Off, last.Off + int64(last.Len)}}
	} else {
		for _, c := range chunks {
			if !c.ownable || c.Len != blob.Align {
				continue
			}
			if n := len(ranges); n > 0 && ranges[n-1][1] == c.Off {
				ranges[n-1][1] += int64(c.Len)
			} else {
				ranges = append(ranges, [2]int64{c.Off, c.Off + int64(c.Len)})
			}
		}
	}
	if len(ranges) == 0 {
		return
	}
	gen := e.extentLog.current() // before the read: a commit after it shows
	old, err := e.extentsOverlapping(e.meta, ino, ranges)
	if err != nil {
		return
	}
	if contiguous {
		plan := &extentPlan{ino: ino, gen: gen, start: ranges[0][0], end: ranges[0][1], pieces: old}
		for _, c := range chunks {
			c.plan = plan
		}
	}
	owned := make(map[int64]*inPlaceTarget, len(old))
	targets := make([]inPlaceTarget, len(old)) // one allocation, not one per block
	for i, p := range old {
		if loc, check, ok := ownedLoc(p); ok && p.Owned && p.Length == blob.Align {
			targets[i] = inPlaceTarget{loc: loc, hash: p.Hash, check: check}
			owned[p.Off] = &targets[i]
		}
	}
	for _, c := range chunks {
		if tg, ok := owned[c.Off]; ok && c.ownable && c.Len == blob.Align {
			tg.ino = ino
			c.inPlace = tg
		}
	}
}

// overwritten is a block a transaction wrote in place: at ino's offset
// off, at loc.
type overwritten struct {
	ino uint64
	off int64
	loc blob.Loc
}

// overwriteOwned is placeInPlace's short way, taken before the old
// extents are punched, for what nearly every chunk planned in place is: a
// block whose extent at the chunk's offset is the owned block planned,
// that nothing in this transaction touched, no pin keeps and no record
// names. Its bytes are written over the block and its extent is set to
// the new hash and check under the same key: one record, no deletion, no
// owned use to settle at commit (the block keeps its one owner). It
// returns the pieces of hits (g's old extents, in file order) left to
// punch; the chunks it did not take stay for placeInPlace.
func (t *Tx) overwriteOwned(ino uint64, g []*Prepared, hits []Piece) ([]Piece, error) {
	if !t.e.inPlace || len(hits) == 0 || t.e.snapshotReaders.Load() > 0 {
		return hits, nil
	}
	if t.e.retainer != nil {
		// A pin that keeps ino's old extents keeps their blocks' bytes.
		if keeps, err := t.e.retainer.Keeps(ino); err != nil || keeps {
			return hits, err
		}
	}
	t.ownedHint = max(t.ownedHint, len(g)) // keepOwnedFresh's map, sized once
	rest := hits[:0:0]
	took, write := make([]*Prepared, 0, len(g)), make([]*Prepared, 0, len(g))
	i := 0
	for _, p := range hits {
		for i < len(g) && g[i].Off < p.Off {
			i++
		}
		if i == len(g) || g[i].Off != p.Off {
			rest = append(rest, p)
			continue
		}
		c := g[i]
		ok, err := t.ownedInPlace(c, p)
		if err != nil {
			return nil, err
		}
		if !ok {
			rest = append(rest, p)
			continue
		}
		c.deferred = false
		c.loc, c.comp, c.overwrote, c.keptExtent = c.inPlace.loc, schema.CompNone, true, true
		t.keepOwnedFresh(c) // a later chunk with its bytes references it
		took = append(took, c)
		if c.newBytes() {
			write = append(write, c)
		}
	}
	// The write first, so that it goes on beside the extents' changes.
	if err := t.overwrite(ino, write); err != nil {
		return nil, err
	}
	for _, c := range took {
		if err := t.putOverwritten(ino, c); err != nil {
			return nil, err
		}
	}
	return rest, nil
}

// ownedInPlace reports whether chunk c may take overwriteOwned's short
// way over p, the extent at its offset.
func (t *Tx) ownedInPlace(c *Prepared, p Piece) (bool, error) {
	tg := c.inPlace
	if !c.deferred || tg == nil || c.Len != blob.Align || !p.Owned || p.ChunkOff != 0 || p.Length != blob.Align {
		return false, nil
	}
	loc, check, ok := ownedLoc(p)
	if !ok || loc.Segment != tg.loc.Segment || loc.Offset != tg.loc.Offset || p.Hash != tg.hash || check != tg.check {
		return false, nil
	}
	if t.owned[blob.Loc{Segment: loc.Segment, Offset: loc.Offset}] != nil {
		return false, nil // this transaction referenced or dropped it already
	}
	if t.ownedFresh[c.Hash] != nil || t.fresh[c.Hash] != nil {
		return false, nil
	}
	named, err := t.recordNames(tg.hash, tg.loc)
	return !named, err
}

// placeInPlace settles the chunks of g (just punched out of ino's extents)
// that Store left unstored for an in-place write and overwriteOwned did
// not take: those that may go in place are written over their block, the
// others are stored now.
func (t *Tx) placeInPlace(ino uint64, g []*Prepared) error {
	var over, store []*Prepared
	for _, c := range g {
		if !c.deferred {
			continue
		}
		c.deferred = false
		ok, err := t.mayOverwrite(c)
		if err != nil {
			return err
		}
		if ok {
			over = append(over, c)
		} else {
			store = append(store, c)
		}
	}
	if len(store) > 0 {
		nameByContent(store) // stored elsewhere: a name of the planned place would lie
		if err := t.e.storeNow(store); err != nil {
			return err
		}
		t.Adopt(store)
	}
	if len(over) == 0 {
		return nil
	}
	// A block written again with the bytes it holds needs no write.
	var write []*Prepared
	for _, c := range over {
		if c.newBytes() {
			write = append(write, c)
		}
	}
	if err := t.overwrite(ino, write); err != nil {
		return err
	}
	for _, c := range over {
		c.loc, c.comp, c.overwrote = c.inPlace.loc, schema.CompNone, true
		// The block as it was, one owner, maybe new bytes: its use starts over.
		t.owned[blob.Loc{Segment: c.loc.Segment, Offset: c.loc.Offset}] = &ownedUse{hash: c.Hash, loc: c.loc, check: c.check}
	}
	return nil
}

// overwrite writes chunks cs of ino over their owned blocks
// (c.inPlace), once intent records cover them. The write goes on beside
// the rest of the transaction, which waits for it before it commits
// (awaitOverwrites), and after the transaction's earlier such writes, so
// that a block written twice keeps the later bytes.
func (t *Tx) overwrite(ino uint64, cs []*Prepared) error {
	if len(cs) == 0 {
		return nil
	}
	locs := make([]blob.Loc, len(cs))
	data := make([][]byte, len(cs))
	offs := make([]int64, len(cs))
	for i, c := range cs {
		locs[i], data[i], offs[i] = c.inPlace.loc, c.data, c.Off
	}
	if err := t.e.intendOverwrite(ino, offs); err != nil {
		return err
	}
	for i, c := range cs {
		t.overwrote = append(t.overwrote, overwritten{ino: ino, off: c.Off, loc: locs[i]})
	}
	done := make(chan error, 1)
	prev, wrote := t.lastOverwrite, make(chan struct{})
	t.lastOverwrite = wrote
	t.overwriting = append(t.overwriting, done)
	go func() {
		defer close(wrote)
		if prev != nil {
			<-prev
		}
		done <- t.e.blobs.(blob.Overwriter).Overwrite(locs, data)
	}()
	t.e.counters.stored.Add(int64(len(cs)) * blob.Align)
	t.e.counters.overwritten.Add(int64(len(cs)))
	t.keptOwned += int64(len(cs)) // new bytes, for the dedup pass
	return nil
}

// mayOverwrite reports whether new chunk c may be written over the owned
// block it was planned for: the block's owner extent is the one this
// transaction just dropped at c's offset, nothing else in it referenced
// the block, no record names its place (a copy or a pin made before), no
// other chunk of the transaction holds c's bytes, and no online check
// reads a snapshot.
func (t *Tx) mayOverwrite(c *Prepared) (bool, error) {
	tg := c.inPlace
	u := t.owned[blob.Loc{Segment: tg.loc.Segment, Offset: tg.loc.Offset}]
	if u == nil || u.fresh != nil || u.owners != -1 || u.copies != 0 || u.hash != tg.hash || u.check != tg.check {
		return false, nil
	}
	if t.ownedFresh[c.Hash] != nil || t.fresh[c.Hash] != nil || t.e.snapshotReaders.Load() > 0 {
		return false, nil
	}
	named, err := t.recordNames(tg.hash, tg.loc)
	return !named, err
}

// recordNames reports whether the chunk record of hash h names the block
// at loc (the block was promoted: a copy or a pin references it).
func (t *Tx) recordNames(h schema.Hash, loc blob.Loc) (bool, error) {
	if f := t.e.lookupFilter(); f != nil && !f.mayHold(h) {
		return false, nil
	}
	v, err := t.reads.Get(schema.ChunkKey(h))
	if errors.Is(err, meta.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	rec, err := schema.DecodeChunk(v)
	if err != nil {
		return false, fmt.Errorf("chunk %s: %w", h.Short(), err)
	}
	return !rec.IsInline() && rec.Segment == loc.Segment && rec.Offset == loc.Offset, nil
}

// putOverwritten stores the owner extent of chunk c, written in place
// (placeInPlace): the block's place, the new hash and check. The volume's
// space is unchanged.
func (t *Tx) putOverwritten(ino uint64, c *Prepared) error {
	c.owned = true
	return t.putOwnerExtent(ino, c)
}

// storeNow stores chunks Store hashed and left unstored (PlanInPlace)
// and waits for them.
func (e *Engine) storeNow(ps []*Prepared) error {
	w, n, err := e.startStore(ps, nil)
	if err != nil {
		return err
	}
	if err := w.Wait(); err != nil {
		return err
	}
	for _, p := range ps {
		p.written = true
	}
	e.counters.stored.Add(n)
	return nil
}

// WritesInPlace reports whether the engine overwrites owned blocks in
// place (usesInPlace).
func (e *Engine) WritesInPlace() bool { return e.inPlace }

// awaitOverwrites waits for the transaction's writes in place and returns
// the first failure.
func (t *Tx) awaitOverwrites() error {
	var first error
	for _, done := range t.overwriting {
		if err := <-done; err != nil && first == nil {
			first = err
		}
	}
	t.overwriting = nil
	return first
}
