package content

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Tx is one metadata transaction of the volume. Transactions are serialized
// (one at a time) so that refcounts and counters can be read, changed and
// written without conflicts. Chunk refcount changes are collected as deltas
// and applied once at commit, so a chunk that is dropped and re-referenced
// within a transaction is never freed.
type Tx struct {
	e       *Engine
	b       meta.Batch
	reads   meta.Reader // b without the retainer's wrapper, which hides what the store's batch can do
	raw     meta.Batch  // b without the retainer: for changes no pin may keep the old value of
	version uint64
	refs    map[schema.Hash]int64
	fresh   map[schema.Hash]*Prepared // the copy a new chunk's record will name
	adopted map[*Prepared]struct{}    // every stored copy handed to this tx
	delta   schema.Stats
	freed   []blob.Loc            // chunks whose last reference went; punch once durable
	release bool                  // freed space was asked back (Release): never pool it
	dupes   []blob.Loc            // stored bytes nobody references; punch at once
	after   []func()              // run once committed
	locked  []func()              // run once committed, before the lock goes
	aborted []func()              // run if it aborts, before the lock goes
	trees   TreeJournal           // the clones an inode lies in (SetTrees)
	created []schema.Hash         // chunks whose records this tx creates
	extents map[uint64]extentSpan // inodes whose extents this tx changes, and where
	mapOps  []extentOp            // its changes to the extents of mapped files (extent_map.go)
	// Owned blocks (owned.go): what the tx does with each, the new ones
	// by hash, and the records it gives blocks that gain references.
	owned      map[blob.Loc]*ownedUse
	ownedSlab  []ownedUse // where ownedUseOf takes the next entry of owned
	ownedFresh map[schema.Hash]*Prepared
	ownedHint  int // how many entries ownedFresh is made with
	promoted   map[schema.Hash][]byte
	// promotesUnsettled: a block it promoted may hold bytes written in
	// place that no Sync made durable yet (promote).
	promotesUnsettled bool
	keptOwned         int64 // new owned blocks it keeps
	unshared          int64 // schema.KeyOwnedUnshared as it leaves it (with keptOwned or unsharedSet)
	// unsharedSet: the dedup pass sets the count (SetUnshared).
	unsharedSet bool
	overwrote   []overwritten // blocks written in place (inplace.go)
	overwriting []chan error  // those writes, in flight until awaitOverwrites
	// lastOverwrite closes when the newest of them ended: the next waits
	// for it, so that a block written twice keeps the later bytes.
	lastOverwrite chan struct{}
	// scratch holds the key and record of the extent being set
	// (setExtent), reused: the batch copies them.
	scratch []byte
	done    bool
}

// Begin starts a transaction; the caller must Commit or Abort it.
func (e *Engine) Begin() (*Tx, error) {
	e.txMu.Lock()
	b, err := e.txBatch()
	if err != nil {
		e.txMu.Unlock()
		return nil, err
	}
	t := &Tx{
		e: e, b: b, reads: b, raw: b, version: e.version + 1,
		refs: map[schema.Hash]int64{}, fresh: map[schema.Hash]*Prepared{},
		adopted: map[*Prepared]struct{}{},
	}
	if e.extentMaps != nil && e.extentMaps.any() {
		w := &extentMapBatch{Batch: b, t: t}
		t.b, t.raw = w, w
	}
	if e.retainer != nil {
		t.b = &retainBatch{Batch: t.b, r: e.retainer, ref: t.RefExtent}
	}
	if e.beginHook != nil {
		e.beginHook(t)
	}
	return t, nil
}

// AwaitTransactions returns once every transaction begun before the call
// has committed or aborted.
func (e *Engine) AwaitTransactions() {
	e.txMu.Lock()
	e.txMu.Unlock() //nolint:staticcheck // an empty critical section is the point
}

// Release marks the transaction as one that gives space back on request
// (a punched hole, TRIM, a truncation, a deleted file): the chunks it
// frees are punched once durable, never pooled for new blocks
// (blob.SlotReuser), so that their space is back at the reclaimer's next
// pass instead of after the pool's slotLife.
func (t *Tx) Release() { t.release = true }

// extentsChanged notes that the transaction changes ino's extents in
// [lo, hi): its extent windows go when it commits, and plans of extents
// there (extent_plan.go) are read again.
func (t *Tx) extentsChanged(ino uint64, lo, hi int64) {
	if t.extents == nil {
		t.extents = map[uint64]extentSpan{}
	}
	if s, ok := t.extents[ino]; ok {
		lo, hi = min(lo, s.lo), max(hi, s.hi)
	}
	t.extents[ino] = extentSpan{lo, hi}
}

// Batch is the metadata batch of the transaction.
func (t *Tx) Batch() meta.Batch { return t.b }

// Version is the volume version this transaction creates.
func (t *Tx) Version() uint64 { return t.version }

// Adopt hands chunks that Prepare stored to the transaction, which frees
// every copy that ends up unreferenced, on commit and on abort alike.
func (t *Tx) Adopt(chunks []*Prepared) {
	for _, c := range chunks {
		if c.written {
			t.adopted[c] = struct{}{}
		}
	}
}

// AddInodes counts created (positive) or deleted (negative) inodes.
func (t *Tx) AddInodes(n int64) { t.delta.Inodes += n }

// Abort discards the transaction.
func (t *Tx) Abort() {
	if t.done {
		return
	}
	t.done = true
	t.b.Close()
	t.awaitOverwrites() // whatever reached the blocks is taken below
	// Chunks stored for this transaction are referenced by nothing.
	for p := range t.adopted {
		t.e.freeNow(p.loc)
	}
	for _, fn := range t.aborted {
		fn()
	}
	t.e.txMu.Unlock()
	if len(t.overwrote) > 0 {
		// Their bytes are new and their extents old: take the bytes.
		if err := t.e.repairOverwritten(t.overwrote); err != nil {
			t.e.log.Error("blocks written in place by a transaction that failed: their extents stay as they were until recovery checks them", "err", err)
		}
	}
}

// Commit applies the transaction atomically; with sync it is durable (data
// first, then metadata) on return.
func (t *Tx) Commit(sync bool) error {
	if t.done {
		return errors.New("content: transaction already finished")
	}
	if err := t.applyRefs(); err != nil {
		t.Abort()
		return err
	}
	stats := t.e.stats
	stats.LogicalBytes += t.delta.LogicalBytes
	stats.PhysicalBytes += t.delta.PhysicalBytes
	stats.RawBytes += t.delta.RawBytes
	stats.Chunks += t.delta.Chunks
	stats.Inodes += t.delta.Inodes
	stats.OwnedBlocks += t.delta.OwnedBlocks
	if err := t.b.Set(schema.KeyStats, stats.Encode()); err != nil {
		t.Abort()
		return err
	}
	if err := t.b.Set(schema.KeyVersion, schema.U64(t.version)); err != nil {
		t.Abort()
		return err
	}
	if err := t.countUnshared(); err != nil {
		t.Abort()
		return err
	}
	if err := t.awaitOverwrites(); err != nil {
		t.Abort() // which takes what reached the blocks
		return err
	}
	// Ordered mode: the chunk bytes a commit names are durable before
	// the commit is; a store whose every commit is durable needs that for
	// every commit that brings new chunks, and only for those chunks
	// (CommitChunks has usually waited for them already). Elsewhere a
	// synced commit is made durable after it is written, by a Sync
	// (syncData, below), and a block promoted while bytes written in
	// place may be unsettled needs every byte durable first (promote).
	bringsBytes := t.freshInStore() || len(t.ownedFresh) > 0 || len(t.overwrote) > 0
	if t.promotesUnsettled || t.e.durableCommits && bringsBytes {
		var err error
		if sync || t.promotesUnsettled {
			err = t.e.blobs.Sync()
		} else {
			err = t.e.syncStored(append(slices.Collect(maps.Values(t.fresh)), slices.Collect(maps.Values(t.ownedFresh))...))
		}
		if err != nil {
			t.Abort()
			return err
		}
	}
	gated := t.namesNewPlaces()
	if gated {
		t.e.syncGate.RLock()
	}
	err := t.b.Commit(sync && t.e.durableCommits) // else: syncData, below, without the gate
	if gated {
		t.e.syncGate.RUnlock()
	}
	if len(t.mapOps) > 0 {
		// Before the extent log counts the commit: a plan that reads the
		// count after it must find the maps changed too (PlanInPlace).
		if err != nil {
			t.e.extentMaps.drop(t.mapOps) // its outcome is not known
		} else {
			t.e.extentMaps.commit(t.mapOps)
		}
	}
	if t.extents != nil {
		// Committed or not known: either way.
		t.e.extentLog.record(t.extents)
		if t.e.windows != nil {
			t.e.windows.drop(t.extents)
		}
	}
	if err != nil {
		// Whether the records landed is not known: the dedup filter
		// could miss them, so lookups go to the store from now on.
		t.e.created.filter.Store(nil)
		t.Abort()
		return fmt.Errorf("commit metadata: %w", err)
	}
	t.done = true
	t.b.Close()
	t.e.created.record(t.created)
	if f := t.e.created.readyFilter(); f != nil && f.full() {
		t.e.startDedupFilter(stats.Chunks) // the table as this commit leaves it
	}
	t.e.version = t.version
	t.e.own.note(t.version)
	t.e.statsMu.Lock()
	t.e.stats = stats
	t.e.statsMu.Unlock()
	if t.keptOwned > 0 || t.unsharedSet {
		t.e.ownedDedup.noteOwned(t.keptOwned, t.unshared)
	}
	for _, fn := range t.locked {
		fn()
	}
	t.e.txMu.Unlock()
	var syncErr error
	if sync && !t.e.durableCommits {
		// The batch is written; a Sync, which no commit slips into, makes
		// it durable with the data before it. The transaction stands
		// whatever the Sync returns.
		syncErr = t.e.syncData()
	}
	for _, loc := range t.dupes {
		t.e.freeNow(loc)
	}
	t.e.reclaimer.add(t.freed, t.release)
	for _, fn := range t.after {
		fn()
	}
	return syncErr
}

// namesNewPlaces reports whether the commit names bytes stored at new
// places: new chunks, or new blocks owned by their extent (new bytes as
// much as new chunks are). Such a commit waits for a running Sync: slipped
// in between its data half and its metadata half, it would be made
// durable without its bytes. Blocks written in place do not count: their
// zone's intent record, durable before the write, stays until a Sync that
// began after the transaction ended (intents.go), so recovery checks
// them whatever this Sync made durable. Held back, every in-place commit
// of a disk image waited for each periodic Sync's fdatasync of the
// blocks written in place before it (about 0.7 s in five of a copy over
// an export's data, with the cores idle).
func (t *Tx) namesNewPlaces() bool {
	if len(t.fresh) > 0 {
		return true
	}
	for _, c := range t.ownedFresh {
		if !c.overwrote {
			return true
		}
	}
	return false
}

// freshInStore reports whether a chunk this transaction references anew
// has its bytes in the blob store (not inline in its record): only then
// must the store be synced before the commit.
func (t *Tx) freshInStore() bool {
	for _, p := range t.fresh {
		if p.inline == nil {
			return true
		}
	}
	return false
}

// iterRefs is how many chunks' refcounts a transaction changes before it
// reads their records with one iterator rather than a point lookup each:
// opening an iterator costs several lookups, and most transactions of
// small files touch one or two chunks.
const iterRefs = 8

// applyRefs writes the refcount deltas into the chunk table, in hash order
// so that one iterator walks the table forward instead of a point lookup
// per chunk (or, for a few chunks, with point lookups).
func (t *Tx) applyRefs() error {
	for p := range t.adopted {
		if p.owned {
			continue // resolveOwned keeps or frees it
		}
		if t.fresh[p.Hash] != p {
			t.dupes = append(t.dupes, p.loc) // another copy of the same chunk won
		} else if _, ok := t.refs[p.Hash]; !ok {
			t.dupes = append(t.dupes, p.loc) // stored, then overwritten in the same tx
		}
	}
	if err := t.resolveOwned(); err != nil {
		return err
	}
	if len(t.refs) == 0 {
		return nil // no iterator to open (most namespace transactions)
	}
	hashes := make([]schema.Hash, 0, len(t.refs))
	missing := map[schema.Hash]bool{}
	for h := range t.refs {
		hashes = append(hashes, h)
		if t.knownMissing(h) || t.promoted[h] != nil {
			missing[h] = true
		}
	}
	slices.SortFunc(hashes, func(a, b schema.Hash) int { return bytes.Compare(a[:], b[:]) })
	// record reads a chunk's record, nil if the table does not hold it.
	record := func(key []byte) ([]byte, error) {
		rec, err := t.b.Get(key)
		if errors.Is(err, meta.ErrNotFound) {
			return nil, nil
		}
		return rec, err
	}
	if many, ok := t.reads.(meta.MultiGetter); ok && len(hashes)-len(missing) > 1 {
		recs, err := t.recordsOf(many, hashes, missing)
		if err != nil {
			return err
		}
		record = func(key []byte) ([]byte, error) { return recs[string(key)], nil }
	} else if len(hashes)-len(missing) > iterRefs {
		it, err := t.b.NewIter(schema.ChunkRange())
		if err != nil {
			return err
		}
		defer it.Close()
		record = func(key []byte) ([]byte, error) {
			if it.SeekGE(key) && bytes.Equal(it.Key(), key) {
				return it.Value(), nil
			}
			return nil, it.Error() // missing, unless the seek failed
		}
	}
	for _, h := range hashes {
		rec := t.promoted[h]
		if !missing[h] {
			var err error
			if rec, err = record(schema.ChunkKey(h)); err != nil {
				return err
			}
		}
		if err := t.applyRef(h, t.refs[h], rec); err != nil {
			return err
		}
	}
	return nil
}

// recordsOf reads the chunk records of hashes not known missing with few
// requests (getChunkRecords) of a store where each lookup is a round trip
// (PostgreSQL), by record key; an iterator seeking among scattered hashes
// there fetches a page per chunk, under the volume's transaction lock.
func (t *Tx) recordsOf(many meta.MultiGetter, hashes []schema.Hash, missing map[schema.Hash]bool) (map[string][]byte, error) {
	ask := make([]schema.Hash, 0, len(hashes)-len(missing))
	for _, h := range hashes {
		if !missing[h] {
			ask = append(ask, h)
		}
	}
	recs := make(map[string][]byte, len(ask))
	err := getChunkRecords(many, ask, func(h schema.Hash, rec []byte) { recs[string(schema.ChunkKey(h))] = rec })
	return recs, err
}

// knownMissing reports whether chunk h has no record without looking: its
// copy was stored (or kept inline) by a Prepare whose lookup found none,
// and no commit has
// created one since (createdLog).
func (t *Tx) knownMissing(h schema.Hash) bool {
	p := t.fresh[h]
	return p != nil && p.hasBytes() && p.missedAt > 0 && !t.e.created.mayExist(h, p.missedAt-1)
}

// applyRef applies delta d to chunk h, whose current record is rec (nil
// if the chunk table does not hold it).
func (t *Tx) applyRef(h schema.Hash, d int64, rec []byte) error {
	key := schema.ChunkKey(h)
	p := t.fresh[h]
	if rec != nil {
		c, err := schema.DecodeChunk(rec)
		if err != nil {
			return fmt.Errorf("chunk %s: %w", h.Short(), err)
		}
		if p != nil && p.written {
			t.dupes = append(t.dupes, p.loc) // someone stored it first
		}
		if d == 0 {
			return nil
		}
		if d < 0 && uint64(-d) > c.Refs {
			return fmt.Errorf("%w: chunk %s refcount %d would go below zero", ErrCorrupt, h.Short(), c.Refs)
		}
		c.Refs = uint64(int64(c.Refs) + d)
		if c.Refs > 0 {
			return t.b.Set(key, c.Encode())
		}
		return t.free(h, c, true)
	}
	if d <= 0 {
		if p != nil && p.written {
			t.dupes = append(t.dupes, p.loc)
		}
		if d < 0 {
			return fmt.Errorf("%w: chunk %s is referenced but not in the chunk table", ErrCorrupt, h.Short())
		}
		return nil
	}
	if p == nil {
		return fmt.Errorf("%w: new reference to unknown chunk %s", ErrCorrupt, h.Short())
	}
	if !p.hasBytes() {
		// It existed when prepared but was freed since: store it now.
		if err := t.e.store(p); err != nil {
			return err
		}
		if p.written {
			t.adopted[p] = struct{}{} // so that an abort frees it
		}
	} else if p.inline == nil {
		if err := t.placeNewChunk(p); err != nil {
			return err
		}
	}
	if err := t.claimSlot(p); err != nil {
		return err
	}
	t.created = append(t.created, h)
	c := schema.Chunk{Segment: p.loc.Segment, Offset: p.loc.Offset, Stored: p.loc.Length, Raw: uint32(p.Len), Comp: p.comp, Refs: uint64(d),
		Check: p.check, HasCheck: true}
	if p.inline != nil {
		c.Segment, c.Offset, c.Stored, c.Inline = 0, 0, uint32(len(p.inline)), string(p.inline)
	}
	t.delta.PhysicalBytes += int64(c.Stored)
	t.delta.RawBytes += int64(c.Raw)
	t.delta.Chunks++
	return t.b.Set(key, c.Encode())
}

// claimSlot deletes, in the batch that names p's bytes, the free record of
// the freed block they were written into (blob.SlotReuser): until this
// batch is durable, a crash leaves the record and recovery punches bytes
// nobody names.
func (t *Tx) claimSlot(p *Prepared) error {
	if t.e.slots == nil || !p.written || p.inline != nil || !t.e.slots.ClaimSlot(p.loc) {
		return nil
	}
	return t.b.Delete(schema.FreeKey(p.loc.Segment, p.loc.Offset))
}

// free deletes chunk h's record c and takes it off the counters. With
// punch, its space is punched once the deletion is durable (a free record
// in the same batch covers a crash before that).
func (t *Tx) free(h schema.Hash, c schema.Chunk, punch bool) error {
	t.delta.PhysicalBytes -= int64(c.Stored)
	t.delta.RawBytes -= int64(c.Raw)
	t.delta.Chunks--
	if punch && !c.IsInline() { // an inline chunk's bytes go with its record
		t.freed = append(t.freed, blob.Loc{Segment: c.Segment, Offset: c.Offset, Length: c.Stored})
		if err := t.b.Set(schema.FreeKey(c.Segment, c.Offset), schema.FreeValue(c.Stored)); err != nil {
			return err
		}
	}
	return t.b.Delete(schema.ChunkKey(h))
}
