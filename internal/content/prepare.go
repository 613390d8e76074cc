package content

import (
	"cmp"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/chunker"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Prepared is a chunk cut from written data, hashed and, if the volume did
// not hold it yet, stored. It is referenced by committing it in a Tx.
type Prepared struct {
	Off  int64 // file offset
	Len  int
	Hash schema.Hash
	Zero bool // all zero: becomes a hole, never stored

	data    []byte // raw bytes; valid until the Tx commits
	loc     blob.Loc
	comp    uint8
	written bool        // this Prepare stored the bytes
	inline  []byte      // the stored bytes, for a record that holds them (Engine.inlines)
	check   uint64      // schema.CheckSum of data, for a new chunk's record
	held    schema.Hint // where the record a dedup lookup found keeps the bytes (hints.go)
	// ownable: a block of a file cut in a disk image's 4 KiB blocks,
	// which a commit may write owned (owned.go); owned: it did.
	ownable, owned bool
	// inPlace: the owned block PlanInPlace expects this chunk to be
	// written over; deferred: Store left it unstored for that, and the
	// commit writes it in place or stores it (Tx.placeInPlace);
	// overwrote: the commit wrote it over inPlace's block; keptExtent:
	// by Tx.overwriteOwned, which set its extent over the old one.
	inPlace                         *inPlaceTarget
	deferred, overwrote, keptExtent bool
	// provisional: Hash is a provisional name, inPlace's place and the
	// check, not the BLAKE3 hash (provisional.go); only while the chunk
	// is to go in place.
	provisional bool
	// plan: the old extents of the chunks' range, as PlanInPlace read
	// them (extent_plan.go).
	plan *extentPlan
	// hostCached: the chunk belongs to a file whose host page cache is
	// kept (KeepHostCache), so it is written through that cache.
	hostCached bool
	// missedAt is 1 + the createdLog gen at which the chunk table lookup
	// found no record (0: not looked up, or found): the commit then looks
	// again only if a record may have been created since.
	missedAt uint64
}

// Prepare cuts data, which starts at file offset off, into chunks and
// stores those the volume does not hold yet. Unless final, the tail after
// the last decidable boundary is left unconsumed for the caller to extend.
// It runs outside any transaction, so writers proceed in parallel; within
// one call, chunks are hashed and stored by several goroutines.
func (e *Engine) Prepare(off int64, data []byte, final bool) ([]*Prepared, int, error) {
	return e.PrepareWith(e.chunk, off, data, final)
}

// PrepareWith is Prepare with a chunker other than the volume's default,
// for files whose chunking policy is overridden.
func (e *Engine) PrepareWith(ch chunker.Chunker, off int64, data []byte, final bool) ([]*Prepared, int, error) {
	out, consumed := Cut(ch, off, data, final)
	if err := e.Store(out); err != nil {
		return nil, 0, err
	}
	return out, consumed, nil
}

// Cut is the first half of PrepareWith: it cuts data into chunks, which
// reference data, and returns them with the bytes consumed. A pipelined
// writer cuts the next data while Store works on the previous chunks.
func Cut(ch chunker.Chunker, off int64, data []byte, final bool) ([]*Prepared, int) {
	pol := ch.Policy()
	typical := max(pol.Size, pol.Avg, 1)
	out := make([]*Prepared, 0, len(data)/typical+1)
	// The chunks are made in slabs: one allocation per chunk was a tenth
	// of a disk image copy's allocations. They live as long as one another.
	var slab []Prepared
	consumed := 0
	disk := pol.DiskBlocks()
	for consumed < len(data) {
		n := ch.Cut(off+int64(consumed), data[consumed:], final)
		if n == 0 {
			break
		}
		if len(slab) == 0 {
			slab = make([]Prepared, (len(data)-consumed)/typical+1)
		}
		p := &slab[0]
		slab = slab[1:]
		*p = Prepared{Off: off + int64(consumed), Len: n, data: data[consumed : consumed+n], ownable: disk}
		out = append(out, p)
		consumed += n
	}
	return out, consumed
}

// Store is the second half of PrepareWith: it hashes the chunks and
// stores those the volume does not hold yet, on several goroutines. On
// error nothing it stored is kept.
//
// It goes through the chunks in groups of about storeGroupBytes: while
// the blob store writes one group's new chunks (a direct write waits for
// the disk), the next group is hashed. A blob.MemoryPutter gets all of
// them in one write after the last group. The chunks count as stored only
// once every write is done, so that no commit references bytes still in
// flight.
func (e *Engine) Store(out []*Prepared) error { return e.storeLent(out, nil) }

// storeLent is Store of chunks cut from loan's memory (nil: none), which
// a blob.Lender may upload from where they lie.
func (e *Engine) storeLent(out []*Prepared, loan *Loan) error {
	// The first copy of each new hash is stored; later ones share it.
	// Sized for every chunk new: grown entry by entry, its rehashing was
	// 2 % of the CPU of a copy into a disk image.
	seen := make(map[schema.Hash]*Prepared, len(out))
	var started []startedWrite
	var dedup, zero int64
	var err error
	// A store that writes to memory gets the batch whole, after the last group.
	_, whole := e.blobs.(blob.MemoryPutter)
	var unstarted []*Prepared
	for i := 0; i < len(out) && err == nil; {
		j, bytes := i, 0
		for j < len(out) && (j == i || bytes+out[j].Len <= storeGroupBytes) {
			bytes += out[j].Len
			j++
		}
		var fresh, toStore []*Prepared
		var d, z int64
		if fresh, d, z, err = e.hashGroup(out[i:j], seen); err == nil {
			toStore = e.deferInPlace(e.keepInline(fresh))
		}
		if err == nil && len(toStore) > 0 {
			if whole {
				unstarted = append(unstarted, toStore...)
			} else {
				err = e.startStoreOf(toStore, nil, &started)
			}
		}
		if err == nil && e.cfg.DeferDedup {
			e.markMissing(fresh) // while the write goes on
		}
		dedup, zero = dedup+d, zero+z
		i = j
	}
	if err == nil && len(unstarted) > 0 {
		err = e.startStoreOf(unstarted, loan, &started)
	}
	for _, s := range started {
		if werr := s.w.Wait(); werr != nil {
			err = cmp.Or(err, werr) // Wait kept nothing of s
			continue
		}
		for _, p := range s.ps {
			p.written = true
		}
		e.counters.stored.Add(s.bytes)
	}
	if err != nil {
		e.discard(out)
		return err
	}
	for _, p := range out {
		if first := seen[p.Hash]; !p.Zero && first != p {
			p.loc, p.comp, p.inline = first.loc, first.comp, first.inline
		}
	}
	nameUndeferred(out)
	e.counters.dedup.Add(dedup)
	e.counters.zero.Add(zero)
	return nil
}

// startStoreOf starts writing ps (startStore) and adds the write to started.
func (e *Engine) startStoreOf(ps []*Prepared, loan *Loan, started *[]startedWrite) error {
	w, stored, err := e.startStore(ps, loan)
	if err == nil {
		*started = append(*started, startedWrite{w, ps, stored})
	}
	return err
}

// storeGroupBytes is about the bytes of chunks Store hashes before it
// starts writing them: one blob store write.
const storeGroupBytes = 1 << 20

// startedWrite is a group of chunks whose write Store started.
type startedWrite struct {
	w     *blob.Writing
	ps    []*Prepared
	bytes int64 // stored (after compression)
}

// hashGroup hashes the chunks of group and returns those that neither an
// earlier chunk of the same Store (in seen, which it extends) nor the
// volume holds, with the bytes of the others: held already, and zeros.
func (e *Engine) hashGroup(group []*Prepared, seen map[schema.Hash]*Prepared) (toStore []*Prepared, dedup, zero int64, err error) {
	held := make([]bool, len(group))
	errs := make([]error, len(group))
	many, batched := e.meta.(meta.MultiGetter)
	// Deferred dedup asks the chunk table nothing before storing: Store
	// asks once the write is under way (markMissing).
	ask := !e.cfg.DeferDedup
	e.nameInPlaceLater(group)
	spans := hashSpans(group)
	parallel(len(spans), func(s int) {
		lo, hi := spans[s][0], spans[s][1]
		hashSpan(group[lo:hi])
		if !ask || batched {
			return
		}
		for i := lo; i < hi; i++ {
			if !group[i].Zero && !group[i].provisional { // a provisional name has no record
				// Beside the hashing, on every core: on a stream of fresh
				// 4 KiB blocks the lookups cost as much as the hashing.
				held[i], errs[i] = e.lookupOne(group[i])
			}
		}
	})
	if ask && batched {
		// One statement for the group where a lookup is a round trip.
		if err := e.lookupMany(many, group, held); err != nil {
			return nil, 0, 0, err
		}
	}
	for i, p := range group {
		if p.Zero {
			zero += int64(p.Len)
			continue
		}
		if _, ok := seen[p.Hash]; ok {
			dedup += int64(p.Len)
			continue
		}
		seen[p.Hash] = p
		if errs[i] != nil {
			return nil, 0, 0, errs[i]
		}
		if held[i] {
			dedup += int64(p.Len) // already stored
			continue
		}
		toStore = append(toStore, p)
	}
	return toStore, dedup, zero, nil
}

// markMissing looks up, for deferred dedup, the chunks being stored: those
// the chunk table lacks are marked missed, so that their commit need not
// read their records under the transaction lock; a chunk found (or a
// failed lookup) stays "not looked up", and its commit reads its record,
// counts the reference there and frees the new copy.
func (e *Engine) markMissing(ps []*Prepared) {
	// A failed lookup marks nothing: the commit then looks.
	if many, ok := e.meta.(meta.MultiGetter); ok {
		_ = e.lookupMany(many, ps, make([]bool, len(ps)))
		return
	}
	parallel(len(ps), func(i int) { e.lookupOne(ps[i]) })
}

// lookupOne looks chunk p up in the chunk table: held, or p is marked
// missed at the current createdLog gen; an error if the store failed.
func (e *Engine) lookupOne(p *Prepared) (held bool, err error) {
	gen := e.created.missGen() // before the filter: see dedupfilter.go
	if f := e.lookupFilter(); f != nil && !f.mayHold(p.Hash) {
		e.counters.filterMisses.Add(1)
		p.missedAt = gen + 1
		return false, nil
	}
	switch rec, err := e.meta.Get(schema.ChunkKey(p.Hash)); {
	case err == nil:
		e.noteHeld(p, rec)
		return true, nil
	case errors.Is(err, meta.ErrNotFound):
		p.missedAt = gen + 1
		return false, nil
	default:
		return false, err
	}
}

// lookupMany looks up the chunk records of group's non-zero chunks with
// one GetMany, marking those held and the missed ones' gen.
func (e *Engine) lookupMany(m meta.MultiGetter, group []*Prepared, held []bool) error {
	gen := e.created.missGen() // before the filter: see dedupfilter.go
	f := e.lookupFilter()
	var keys [][]byte
	var at []int
	for i, p := range group {
		switch {
		case p.Zero:
		case f != nil && !f.mayHold(p.Hash):
			e.counters.filterMisses.Add(1)
			p.missedAt = gen + 1 // no record: the filter holds every hash the table does
		default:
			keys, at = append(keys, schema.ChunkKey(p.Hash)), append(at, i)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	vals, err := m.GetMany(keys)
	if err != nil {
		return err
	}
	for j, i := range at {
		if vals[j] != nil {
			held[i] = true
			e.noteHeld(group[i], vals[j])
		} else {
			group[i].missedAt = gen + 1
		}
	}
	return nil
}

// parallel runs fn(0..n-1) on up to GOMAXPROCS goroutines.
func parallel(n int, fn func(i int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
	if workers <= 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// deferInPlace leaves the chunks of ps that PlanInPlace expects to go in
// place unstored (deferred) and returns the others. The intent records
// those with new bytes will need are made durable here, outside the
// transaction lock: a synced commit there held every other commit for
// its fdatasync (about 8 ms per 64 MiB zone). The transaction makes sure
// of them again (a Sync may have cleared them meanwhile); one made for a
// write that does not happen costs only a check after a crash.
func (e *Engine) deferInPlace(ps []*Prepared) []*Prepared {
	if !e.inPlace {
		return ps
	}
	rest := ps[:0:0]
	var ino uint64
	var offs []int64
	for _, p := range ps {
		tg := p.inPlace
		if tg == nil {
			rest = append(rest, p)
			continue
		}
		p.deferred = true
		if !p.provisional && p.Hash == tg.hash && p.check == tg.check {
			continue // the same bytes: nothing to write
		}
		if len(offs) > 0 && tg.ino != ino {
			e.intendEarly(ino, offs)
			offs = offs[:0]
		}
		ino = tg.ino
		offs = append(offs, p.Off)
	}
	e.intendEarly(ino, offs)
	return rest
}

// intendEarly makes the intent records of ino's blocks at offs durable
// ahead of their transaction; a failure is the transaction's to meet.
func (e *Engine) intendEarly(ino uint64, offs []int64) {
	if len(offs) == 0 {
		return
	}
	if err := e.intendOverwrite(ino, offs); err != nil {
		e.log.Debug("intent record ahead of a write in place", "ino", ino, "err", err)
	}
}

// keepInline keeps the chunks of ps that go into their records inline
// and returns the others, which go to the blob store.
func (e *Engine) keepInline(ps []*Prepared) []*Prepared {
	rest := ps[:0:0]
	for _, p := range ps {
		if e.inlines(p.Len) {
			e.storeInline(p)
		} else {
			rest = append(rest, p)
		}
	}
	return rest
}

// store compresses and writes p's bytes to the blob store, or keeps them
// for its record if the chunk goes inline.
func (e *Engine) store(p *Prepared) error {
	if e.inlines(p.Len) {
		e.storeInline(p)
		return nil
	}
	stored, comp := e.comp.compress(p.data)
	if err := e.cfg.Headroom.ForData(int64(len(stored))); err != nil {
		return err
	}
	loc, err := e.blobs.Put(stored)
	if err != nil {
		return err
	}
	p.loc, p.comp, p.written = loc, comp, true
	e.counters.stored.Add(int64(len(stored)))
	return nil
}

// startStore compresses ps's bytes on several goroutines and starts
// writing them to the blob store in one batch; the Writing's Wait says
// when they are stored. It returns the bytes written. On error nothing is
// stored.
func (e *Engine) startStore(ps []*Prepared, loan *Loan) (*blob.Writing, int64, error) {
	stored := make([][]byte, len(ps))
	comps := make([]uint8, len(ps))
	var total int64
	if e.comp.enc == nil {
		for i, p := range ps {
			stored[i] = p.data
		}
	} else {
		parallel(len(ps), func(i int) { stored[i], comps[i] = e.comp.compress(ps[i].data) })
	}
	for _, b := range stored {
		total += int64(len(b))
	}
	if err := e.cfg.Headroom.ForData(total); err != nil {
		return nil, 0, err
	}
	var w *blob.Writing
	var err error
	if lender, ok := e.blobs.(blob.Lender); ok && loan != nil && e.comp.enc == nil {
		w, err = lender.StartPutManyLent(stored, loan.backing, loan.take())
	} else {
		w, err = e.startPutMany(ps, stored)
	}
	if err != nil {
		return nil, 0, err
	}
	for i, p := range ps {
		p.loc, p.comp = w.Locs[i], comps[i]
	}
	return w, total, nil
}

// discard frees chunks stored by a Prepare whose result will not be used.
func (e *Engine) discard(ps []*Prepared) {
	for _, p := range ps {
		if p.written {
			e.freeNow(p.loc)
		}
	}
}

// isZero reports whether p is all zero bytes.
func isZero(p []byte) bool {
	for len(p) >= len(zeroBlock) {
		if string(p[:len(zeroBlock)]) != string(zeroBlock[:]) {
			return false
		}
		p = p[len(zeroBlock):]
	}
	return string(p) == string(zeroBlock[:len(p)])
}

var zeroBlock [4096]byte

// Discard gives back the space of chunks a Prepare stored for a write that
// will not be committed.
func (e *Engine) Discard(ps []*Prepared) { e.discard(ps) }
