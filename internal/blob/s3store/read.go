package s3store

import (
	"cmp"
	"fmt"
	"os"
	"slices"

	"github.com/doppelfs/doppel/internal/blob"
)

// Read implements blob.Store. The bytes come from the pack in memory
// while it is not uploaded, else from the read cache, else from one
// ranged GET of exactly the chunk (whose result the cache keeps). The
// caller (the content layer) verifies them against the chunk's check.
func (s *Store) Read(loc blob.Loc, buf []byte) ([]byte, error) {
	if err := checkLoc(loc); err != nil {
		return nil, err
	}
	if len(buf) < int(loc.Length) {
		buf = make([]byte, loc.Length)
	}
	buf = buf[:loc.Length]
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("s3: read: %w", os.ErrClosed)
	}
	mem, inMem := s.inMemory(loc.Segment)
	o, listed := s.packs[loc.Segment]
	s.mu.Unlock()
	off, end := int64(loc.Offset), int64(loc.Offset)+int64(loc.Length)
	switch {
	case inMem && end > int64(len(mem)), listed && end > o.size:
		return nil, fmt.Errorf("s3: pack %d: %d bytes at %d past its end: %w", loc.Segment, loc.Length, off, blob.ErrCorrupt)
	case inMem:
		copy(buf, mem[off:end])
		return buf, nil
	case loc.Length == 0:
		return buf, nil
	}
	if s.cache != nil && s.cache.get(loc, buf) {
		return buf, nil
	}
	if err := s.objs.get(loc.Segment, off, buf); err != nil {
		return nil, err
	}
	if s.cache != nil {
		s.cache.put(loc, buf)
	}
	return buf, nil
}

// inMemory returns the bytes of pack num if this store still holds them.
// s.mu is held.
func (s *Store) inMemory(num uint32) ([]byte, bool) {
	if s.open != nil && s.open.num == num {
		return s.open.buf, true
	}
	if p := s.pending[num]; p != nil {
		return p.buf, true
	}
	return nil, false
}

// prefetchGap is the largest gap between two chunks of a pack that one
// prefetch GET spans: a little unneeded data costs less than a request.
const prefetchGap = 256 << 10

// Prefetch implements blob.Store: chunks not in memory or in the cache
// are fetched in the background, those of one pack close together with
// one ranged GET, into the read cache. Without a cache it does nothing.
func (s *Store) Prefetch(locs []blob.Loc) {
	if s.cache == nil {
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	var todo []blob.Loc
	for _, l := range locs {
		o, listed := s.packs[l.Segment]
		if checkLoc(l) == nil && l.Length > 0 && listed && int64(l.Offset)+int64(l.Length) <= o.size && !s.cache.has(l) {
			todo = append(todo, l)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(todo, func(a, b blob.Loc) int {
		return cmp.Or(cmp.Compare(a.Segment, b.Segment), cmp.Compare(a.Offset, b.Offset))
	})
	for i := 0; i < len(todo); {
		j := i + 1
		end := todo[i].Offset + uint64(todo[i].Length)
		for ; j < len(todo) && todo[j].Segment == todo[i].Segment && todo[j].Offset <= end+prefetchGap; j++ {
			end = max(end, todo[j].Offset+uint64(todo[j].Length))
		}
		group := todo[i:j]
		i = j
		select {
		case s.prefetchSem <- struct{}{}:
		default:
			return // enough is being fetched; the reads will fetch the rest
		}
		s.prefetching.Add(1)
		go func() {
			defer func() { <-s.prefetchSem; s.prefetching.Done() }()
			s.fetchInto(group, end)
		}()
	}
}

// fetchInto reads the range of one pack that holds the chunks of group
// (sorted, ending at end) and puts each chunk into the cache.
func (s *Store) fetchInto(group []blob.Loc, end uint64) {
	start := group[0].Offset
	buf := make([]byte, end-start)
	if s.objs.get(group[0].Segment, int64(start), buf) != nil {
		return // only a hint
	}
	for _, l := range group {
		s.cache.put(l, buf[l.Offset-start:l.Offset-start+uint64(l.Length)])
	}
}

// Forget implements blob.Store; it does nothing: the read cache is the
// only copy this host keeps, and its LRU order serves streaming readers.
func (s *Store) Forget([]blob.Loc) {}
