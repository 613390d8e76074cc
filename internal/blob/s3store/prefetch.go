package s3store

import (
	"cmp"
	"slices"
	"sync"

	"github.com/doppelfs/doppel/internal/blob"
)

// prefetchGap is the largest gap between two chunks of a pack that one
// prefetch GET spans: a little unneeded data costs less than a request.
const prefetchGap = 256 << 10

// fetch is one prefetch: a ranged GET of [start, end) of pack num. Its
// bytes stay in memory (staged) until the chunks it was asked for (and
// those later prefetches found it holds) were read once, and its last
// chunk too, or until room is needed; meanwhile they are written to the
// read cache. A read of a chunk it holds waits for the GET if it is under
// way rather than sending one of its own, but only until the chunk's
// bytes arrived (filled), and then copies from memory: a streaming reader
// never waits for the disk cache, nor for the rest of a long range.
type fetch struct {
	num        uint32
	start, end uint64
	rb         *recBuf // the buffer of the GET, pooled; nil once recycled
	filled     uint64  // bytes of rb.data that hold the range's; staging.mu
	ended      bool    // the GET ended (filled is final); staging.mu
	// wanted holds the offsets of the chunks asked for (or claimed by a
	// later prefetch) that no read took yet, taken those of the chunks read.
	wanted, taken map[uint64]bool
	tailRead      bool // a read took the range's last chunk
	staged        bool // findable by reads; guarded by staging.mu
	refs          int  // holders of the budget: staging and the cache writer
	readers       int  // reads that found f and may copy from buf; staging.mu
	uncached      bool // read once by a long scan: not written to the cache
}

// staging is the prefetches in memory. Their bytes count against limit
// (Config.PrefetchBytes) from the moment the GET is started until both
// staging and the cache writer are done with them, so prefetching holds at
// most limit bytes of memory whatever the readers do.
type staging struct {
	mu     sync.Mutex
	arrive *sync.Cond // on mu: a fetch's filled grew or its GET ended
	limit  int64
	bytes  int64
	byPack map[uint32][]*fetch
	order  []*fetch // staged fetches, oldest first
}

func newStaging(limit int64) *staging {
	st := &staging{limit: limit, byPack: map[uint32][]*fetch{}}
	st.arrive = sync.NewCond(&st.mu)
	return st
}

// covers reports whether a staged fetch holds l. st.mu is held.
func (st *staging) covering(l blob.Loc) *fetch {
	for _, f := range st.byPack[l.Segment] {
		if f.start <= l.Offset && l.Offset+uint64(l.Length) <= f.end {
			return f
		}
	}
	return nil
}

// read fills buf with the bytes of l from a staged fetch, waiting for
// them to arrive; false if no fetch holds l or its GET failed before they
// did.
func (st *staging) read(l blob.Loc, buf []byte) bool {
	st.mu.Lock()
	f := st.covering(l)
	if f == nil {
		st.mu.Unlock()
		return false
	}
	f.readers++ // f.rb is not recycled while we copy
	from, to := l.Offset-f.start, l.Offset-f.start+uint64(l.Length)
	for f.filled < to && !f.ended {
		st.arrive.Wait()
	}
	ok := f.filled >= to
	var data []byte
	if ok {
		data = f.rb.data[from:to] // written before filled grew past it, never after
	}
	st.mu.Unlock()
	if ok {
		copy(buf, data)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	f.readers--
	delete(f.wanted, l.Offset)
	f.taken[l.Offset] = true
	f.tailRead = f.tailRead || l.Offset+uint64(l.Length) >= f.end
	if ok && len(f.wanted) == 0 && f.tailRead {
		st.unstage(f) // read through: the cache has it for rereads
	}
	st.recycle(f)
	return ok
}

// add stages f (its bytes counted) if the budget has room, making room by
// unstaging the oldest fetches whose GET ended; false if it has none.
// With extendTo past f.end, f goes on up to there (or to the first staged
// range after it).
func (st *staging) add(f *fetch, extendTo uint64) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, g := range st.byPack[f.num] {
		if g.end > f.end {
			extendTo = min(extendTo, max(g.start, f.end))
		}
	}
	f.end = max(f.end, extendTo)
	size := int64(f.end - f.start)
	for i := 0; st.bytes+size > st.limit && i < len(st.order); {
		if st.order[i].ended {
			st.unstage(st.order[i]) // removes it from order
		} else {
			i++
		}
	}
	if st.bytes+size > st.limit {
		return false
	}
	st.bytes += size
	f.staged, f.refs = true, 2
	st.byPack[f.num] = append(st.byPack[f.num], f)
	st.order = append(st.order, f)
	return true
}

// unstage makes f unfindable and drops staging's hold on its bytes.
// st.mu is held.
func (st *staging) unstage(f *fetch) {
	if !f.staged {
		return
	}
	f.staged = false
	del := func(x *fetch) bool { return x == f }
	st.byPack[f.num] = slices.DeleteFunc(st.byPack[f.num], del)
	if len(st.byPack[f.num]) == 0 {
		delete(st.byPack, f.num)
	}
	st.order = slices.DeleteFunc(st.order, del)
	st.release(f)
}

// release drops one hold on f's bytes; the last one returns them to the
// budget. st.mu is held.
func (st *staging) release(f *fetch) {
	if f.refs--; f.refs == 0 {
		st.bytes -= int64(f.end - f.start)
		st.recycle(f)
	}
}

// recycle returns f's buffer to the pool once neither staging, the cache
// writer nor a read holds it. st.mu is held.
func (st *staging) recycle(f *fetch) {
	if f.refs == 0 && f.readers == 0 && f.rb != nil {
		f.rb.recycle()
		f.rb = nil
	}
}

// dropPack unstages the fetches of pack num (a deleted pack).
func (st *staging) dropPack(num uint32) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, f := range slices.Clone(st.byPack[num]) {
		st.unstage(f)
	}
}

// Prefetch implements blob.Store: chunks not in memory, staged or cached
// are fetched in the background, those of one pack close together with
// one ranged GET (at most Config.Fetches at once), into memory and from
// there into the read cache. What does not fit the prefetch budget is
// left for the reads.
func (s *Store) Prefetch(locs []blob.Loc) { s.prefetch(locs, 0, false) }

// PrefetchStream implements blob.StreamPrefetcher. The ranges of a
// sequential reader past the first quarter of the read cache (scanCached)
// are served from memory but not written to the cache: a scan longer than
// the cache would only replace everything in it, its own beginning
// included, before anything read it again, while its writes compete with
// the GETs for the disk and the CPU (BENCHMARKS.md, issue 14). Files up to
// that size, and the head of every longer one, are still cached as they
// are read.
func (s *Store) PrefetchStream(locs []blob.Loc, streamed int64) {
	s.prefetch(locs, streamed, true)
}

// prefetch is Prefetch, or PrefetchStream if stream: then the last range
// fetched of each pack goes on to the pack's end. A sequential writer's
// chunks lie in its packs in file order (content.StoreTurn), so the rest
// of the pack is what the reader wants next; fetched now, the next
// window's chunks of the pack are staged already, and a pack costs one
// GET instead of one per readahead step that reaches into it (the S3
// server's CPU goes mostly by request, BENCHMARKS.md).
func (s *Store) prefetch(locs []blob.Loc, streamed int64, stream bool) {
	uncached := s.cache != nil && streamed > s.scanCached()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	var todo []blob.Loc
	sizes := map[uint32]uint64{} // of listed packs
	s.staged.mu.Lock()
	for _, l := range locs {
		o, listed := s.packs[l.Segment]
		if listed {
			sizes[l.Segment] = uint64(o.size)
		}
		// A pack this store has not listed may be another host's, newer
		// than the listing (Grace set: others write): a range past its
		// end fails its GET, and the read then gets the chunk itself.
		known := listed && int64(l.Offset)+int64(l.Length) <= o.size || !listed && s.cfg.Grace > 0 && s.inMemory(l.Segment) == nil
		if s.checkLoc(l) != nil || l.Length == 0 || !known {
			continue
		}
		if f := s.staged.covering(l); f != nil {
			if !f.taken[l.Offset] {
				f.wanted[l.Offset] = true // a stream's range fetched already: kept until read
			}
		} else if s.cache == nil || !s.cache.has(l) {
			todo = append(todo, l)
		}
	}
	s.staged.mu.Unlock()
	s.mu.Unlock()
	slices.SortFunc(todo, func(a, b blob.Loc) int {
		return cmp.Or(cmp.Compare(a.Segment, b.Segment), cmp.Compare(a.Offset, b.Offset))
	})
	todo = slices.CompactFunc(todo, func(a, b blob.Loc) bool { return a == b })
	for i := 0; i < len(todo); {
		f := &fetch{num: todo[i].Segment, start: todo[i].Offset, end: todo[i].Offset + uint64(todo[i].Length),
			wanted: map[uint64]bool{todo[i].Offset: true}, taken: map[uint64]bool{},
			uncached: uncached}
		j := i + 1
		for ; j < len(todo) && todo[j].Segment == f.num && todo[j].Offset <= f.end+prefetchGap; j++ {
			f.end = max(f.end, todo[j].Offset+uint64(todo[j].Length))
			f.wanted[todo[j].Offset] = true
		}
		i = j
		extendTo := f.end
		if lastOfPack := i == len(todo) || todo[i].Segment != f.num; stream && lastOfPack {
			extendTo = max(extendTo, sizes[f.num])
		}
		if !s.staged.add(f, extendTo) {
			return // the budget is full of ranges not read yet; the reads fetch the rest
		}
		s.prefetching.Add(1)
		go func() {
			defer s.prefetching.Done()
			s.runFetch(f)
		}()
	}
}

// runFetch GETs f's range (waiting for a slot), hands it to the reads and
// writes it to the read cache.
func (s *Store) runFetch(f *fetch) {
	s.fetchSlots <- struct{}{}
	rb := pooledRecordBuf(int(f.end - f.start)) // the cache writes it without a copy
	st := s.staged
	st.mu.Lock()
	f.rb = rb // not recycled before the release below: this holds a ref
	st.mu.Unlock()
	err := s.objs.getFilling(f.num, int64(f.start), rb.data, func(n int) {
		st.mu.Lock()
		f.filled = uint64(n)
		st.mu.Unlock()
		st.arrive.Broadcast()
	})
	<-s.fetchSlots
	s.gone.noteMissing(f.num, err)
	st.mu.Lock()
	f.ended = true
	st.mu.Unlock()
	st.arrive.Broadcast()
	if err != nil {
		st.mu.Lock()
		st.unstage(f) // the reads GET their chunks themselves
		st.release(f)
		st.mu.Unlock()
		return
	}
	if s.cache != nil && !f.uncached {
		s.cache.putRecord(blob.Loc{Segment: f.num, Offset: f.start, Length: uint32(f.end - f.start)}, rb)
	}
	st.mu.Lock()
	st.release(f)
	st.mu.Unlock()
}

// scanCached is how much of a sequential stream PrefetchStream writes to
// the read cache.
func (s *Store) scanCached() int64 { return s.cfg.CacheBytes / 4 }
