package s3store

import (
	"fmt"
	"os"

	"github.com/doppelfs/doppel/internal/blob"
)

// Read implements blob.Store. The bytes come from the pack in memory
// while it is not uploaded, else from a prefetch's range in memory
// (waiting for its GET if it is under way), else from the read cache,
// else from one ranged GET of exactly the chunk (whose result the cache
// keeps). The caller (the content layer) verifies them against the
// chunk's check.
func (s *Store) Read(loc blob.Loc, buf []byte) ([]byte, error) {
	if err := s.checkLoc(loc); err != nil {
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
	p := s.inMemory(loc.Segment)
	var mem []byte
	if p != nil {
		mem = p.buf
		p.readers++ // its buffer is not recycled while we copy
	}
	o, listed := s.packs[loc.Segment]
	s.mu.Unlock()
	off, end := int64(loc.Offset), int64(loc.Offset)+int64(loc.Length)
	var err error
	switch {
	case p != nil && end > int64(len(mem)), listed && end > o.size:
		err = fmt.Errorf("s3: pack %d: %d bytes at %d past its end: %w", loc.Segment, loc.Length, off, blob.ErrCorrupt)
	case p != nil:
		copy(buf, mem[off:end])
	}
	if p != nil {
		s.mu.Lock()
		p.readers--
		s.recycle(p)
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return buf, nil
	}
	switch {
	case err != nil:
		return nil, err
	case loc.Length == 0:
		return buf, nil
	}
	if s.staged.read(loc, buf) {
		return buf, nil
	}
	if s.cache != nil && s.cache.get(loc, buf) {
		return buf, nil
	}
	if err := s.objs.get(loc.Segment, off, buf); err != nil {
		s.gone.noteMissing(loc.Segment, err)
		return nil, err
	}
	if s.cache != nil {
		s.cache.put(loc, buf)
	}
	return buf, nil
}

// inMemory returns pack num if this store still holds its bytes. s.mu is
// held.
func (s *Store) inMemory(num uint32) *pack {
	if s.open != nil && s.open.num == num {
		return s.open
	}
	return s.pending[num]
}

// Forget implements blob.Store; it does nothing: the read cache is the
// only copy this host keeps, and its LRU order serves streaming readers.
func (s *Store) Forget([]blob.Loc) {}
