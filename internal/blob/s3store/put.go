package s3store

import (
	"fmt"
	"hash/crc32"
	"math"
	"os"

	"github.com/doppelfs/doppel/internal/blob"
)

// pack is a pack object while this store holds its bytes: being filled,
// or sealed and waiting for (or retrying) its upload.
type pack struct {
	num uint32
	buf []byte   // the object's bytes: chunks at the store's alignment, zeros between
	mem *packMem // where buf was allocated (buf is mem's memory unless a chunk outgrew it)
	// crc is the CRC32C of buf (its PUT's checksum header), brought up to
	// date as chunks are copied in, while their bytes are still in the
	// CPU's cache: a pass over the sealed 4 MiB cost a tenth of the
	// daemon's CPU on a streaming write.
	crc uint32
	// lent, when not nil, says buf is a caller's memory (StartPutManyLent),
	// given back by calling it once the pack is uploaded and unread.
	lent func()
	// round is non-nil while an upload round runs, closed when it ends.
	round    chan struct{}
	uploaded bool
	err      error // of the last round, if it failed
	readers  int   // Reads copying from buf; buf is recycled once none is left after the upload
}

// Put implements blob.Store: PutMany of one chunk.
func (s *Store) Put(data []byte) (blob.Loc, error) {
	locs, err := s.PutMany([][]byte{data})
	if err != nil {
		return blob.Loc{}, err
	}
	return locs[0], nil
}

// StartPutMany implements blob.Store. The bytes are copied into packs in
// memory, readable at once, so the Writing has nothing to wait for.
func (s *Store) StartPutMany(data [][]byte) (*blob.Writing, error) {
	locs, err := s.PutMany(data)
	if err != nil {
		return nil, err
	}
	return &blob.Writing{Locs: locs}, nil
}

// PutsToMemory implements blob.MemoryPutter: PutMany copies into packs in
// memory.
func (s *Store) PutsToMemory() {}

// PutMany implements blob.Store: each chunk is copied into the open pack
// at the next boundary of the store's alignment (right after the last
// chunk in packs without padding); a chunk that would take the pack past
// PackSize seals it and opens the next, unless the chunks left of data
// (this one included) fit in the pack's slack: then the pack grows past
// PackSize to hold them. A writer's commit seals the pack its batch ends
// in (ordered mode), so without the slack a batch of twice PackSize left
// a pack holding only its last chunk or two, one more PUT each time. On
// error nothing is kept.
func (s *Store) PutMany(data [][]byte) ([]blob.Loc, error) {
	var left int64 // of data, rounded as they will be stored
	for _, p := range data {
		if uint64(len(p)) > math.MaxUint32 {
			return nil, fmt.Errorf("s3: chunk of %d bytes is too large", len(p))
		}
		left += s.alignUp(int64(len(p)))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("s3: put: %w", os.ErrClosed)
	}
	locs := make([]blob.Loc, 0, len(data))
	for _, p := range data {
		size := s.alignUp(int64(len(p)))
		if o := s.open; o == nil || (len(o.buf) > 0 && s.alignUp(int64(len(o.buf)))+size > s.cfg.PackSize &&
			s.alignUp(int64(len(o.buf)))+left > s.cfg.PackSize+s.slack()) {
			if err := s.rotate(); err != nil {
				for _, l := range locs {
					s.ledger.add(l.Segment, s.span(l))
				}
				return nil, err
			}
		}
		o := s.open
		off, from := s.alignUp(int64(len(o.buf))), len(o.buf)
		o.buf = append(o.buf, zeros[:off-int64(from)]...)
		o.buf = append(o.buf, p...)
		o.crc = crc32.Update(o.crc, castagnoli, o.buf[from:])
		locs = append(locs, blob.Loc{Segment: o.num, Offset: uint64(off), Length: uint32(len(p))})
		left -= size
	}
	return locs, nil
}

// rotate seals the open pack, if it holds bytes, and opens a new one.
// While MaxPending packs wait for upload it waits; a pack whose upload
// failed gets one more round, and if that fails too the object store is
// unreachable and the Put fails (the next Put or Sync tries again, so
// writes resume when the service is back). s.mu is held.
func (s *Store) rotate() error {
	num, err := s.takeNum()
	if err != nil {
		return err
	}
	if s.open != nil && len(s.open.buf) > 0 {
		s.seal(s.open)
	}
	mem := s.takePackMem()
	s.open = &pack{num: num, buf: mem.data[:0], mem: mem}
	return nil
}

// waitRoom waits while MaxPending packs wait for upload; a pack whose
// upload failed gets one more round, and if that fails too the object
// store is unreachable and waitRoom fails. s.mu is held.
func (s *Store) waitRoom() error {
	retried := map[*pack]bool{}
	for len(s.pending) >= s.cfg.MaxPending && !s.closed {
		for _, p := range s.pending {
			if p.round == nil && p.err != nil {
				if retried[p] {
					return fmt.Errorf("s3: %d packs wait for upload: %w", len(s.pending), p.err)
				}
				s.startRound(p)
				retried[p] = true
			}
		}
		s.changed.Wait()
	}
	if s.closed {
		return fmt.Errorf("s3: put: %w", os.ErrClosed)
	}
	return nil
}

// takeNum waits for room in the upload queue (waitRoom) and takes the
// next pack number, for a new open pack or a lent batch. s.mu is held.
func (s *Store) takeNum() (uint32, error) {
	if err := s.waitRoom(); err != nil {
		return 0, err
	}
	return s.nextNum()
}

// nextNum takes the next pack number, reserving more when the ones
// reserved are used up. s.mu is held.
func (s *Store) nextNum() (uint32, error) {
	if s.next == s.limit {
		first, err := s.alloc.Allocate(allocBlock, s.limit-1)
		if err != nil {
			return 0, fmt.Errorf("s3: allocate pack numbers: %w", err)
		}
		s.next, s.limit = first, first+allocBlock
	}
	s.next++
	return s.next - 1, nil
}

// seal hands pack p over to the uploads. s.mu is held.
func (s *Store) seal(p *pack) {
	if s.open == p {
		s.open = nil
	}
	s.pending[p.num] = p
	s.startRound(p)
}

// slack is how far past PackSize a pack may grow to take the end of a
// PutMany: a quarter of PackSize.
func (s *Store) slack() int64 { return s.cfg.PackSize / 4 }

// packCap is the capacity of a pack's buffer: PackSize and its slack.
func (s *Store) packCap() int { return int(s.cfg.PackSize + s.slack()) }

// takePackMem returns pack memory of packCap bytes, recycled when some is
// free: fresh memory costs the kernel's faulting in of its pages, for
// every pack. s.mu is held.
func (s *Store) takePackMem() *packMem {
	if n := len(s.freeMems); n > 0 {
		m := s.freeMems[n-1]
		s.freeMems = s.freeMems[:n-1]
		return m
	}
	return newPackMem(s.packCap())
}

// recycle gives p's memory back once p is uploaded and no Read copies
// from it: to the free list, which keeps as much as a full upload queue
// and the open pack take, or to the system. s.mu is held.
func (s *Store) recycle(p *pack) {
	if !p.uploaded || p.readers > 0 || p.buf == nil {
		return
	}
	p.buf = nil
	if p.lent != nil {
		p.lent()
		p.lent = nil
		return
	}
	if m := p.mem; m != nil {
		p.mem = nil
		if len(s.freeMems) < s.cfg.MaxPending+1 {
			s.freeMems = append(s.freeMems, m)
		} else {
			m.release()
		}
	}
}
