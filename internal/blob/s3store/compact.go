package s3store

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
)

var _ blob.Compactable = (*Store)(nil)

// SparseSegments implements blob.Compactable: uploaded packs whose live
// bytes (the Align-rounded size less the ledger's dead spans) are below
// maxLive of their size, fewest live bytes first. Retired packs are left
// out, and so are packs wholly dead (the next Free or sweep deletes them
// without copying anything).
func (s *Store) SparseSegments(maxLive float64) []blob.SegmentUse {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []blob.SegmentUse
	for num, o := range s.packs {
		if _, retired := s.retired[num]; retired || s.pending[num] != nil {
			continue
		}
		size := s.alignUp(o.size)
		live := size - total(s.ledger.dead[num])
		if live > 0 && float64(live) < maxLive*float64(size) {
			out = append(out, blob.SegmentUse{Num: num, Size: o.size, Live: live})
		}
	}
	slices.SortFunc(out, func(a, b blob.SegmentUse) int {
		return cmp.Or(cmp.Compare(a.Live, b.Live), cmp.Compare(a.Num, b.Num))
	})
	return out
}

// ReadSegment implements blob.Compactable with one GET of the whole
// object, past the read cache: compaction reads each pack once.
func (s *Store) ReadSegment(num uint32) ([]byte, error) {
	s.mu.Lock()
	o, ok := s.packs[num]
	closed := s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return nil, fmt.Errorf("s3: read pack %d: %w", num, os.ErrClosed)
	case !ok:
		return nil, fmt.Errorf("s3: read pack %d: %w", num, os.ErrNotExist)
	}
	buf := make([]byte, o.size)
	if err := s.objs.get(num, 0, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// Retire implements blob.Compactable: the whole pack is marked dead (the
// ledger saves that at the next Sync) and waits RetireGrace before
// DeleteRetired deletes it.
func (s *Store) Retire(num uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.packs[num]
	if !ok {
		return fmt.Errorf("s3: retire pack %d: %w", num, os.ErrNotExist)
	}
	s.ledger.add(num, blob.Span{Start: 0, End: s.alignUp(o.size)})
	s.retired[num] = time.Now()
	return nil
}

// retireDeadPacks treats packs that the ledger says are all dead as
// retired now: a previous open may have retired them and not lived to
// delete them. s.mu is held or the store is not shared yet.
func (s *Store) retireDeadPacks() {
	now := time.Now()
	for num, o := range s.packs {
		if s.ledger.allDead(num, s.alignUp(o.size)) {
			s.retired[num] = now
		}
	}
}

// DeleteRetired implements blob.Compactable. A pack whose deletion
// fails stays retired and is tried again by the next call.
func (s *Store) DeleteRetired() (int, int64, error) {
	type due struct {
		num   uint32
		o     object
		since time.Time
	}
	var todo []due
	s.mu.Lock()
	for num, since := range s.retired {
		if time.Since(since) < s.cfg.RetireGrace {
			continue
		}
		delete(s.retired, num)
		if o, ok := s.packs[num]; ok {
			delete(s.packs, num) // claimed: exactly one caller deletes it
			todo = append(todo, due{num, o, since})
		}
	}
	s.mu.Unlock()
	var n int
	var bytes int64
	var firstErr error
	for _, d := range todo {
		if err := s.deletePack(d.num, d.o); err != nil { // lists it again
			s.mu.Lock()
			s.retired[d.num] = d.since
			s.mu.Unlock()
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		n++
		bytes += d.o.size
	}
	return n, bytes, firstErr
}

// Relist implements blob.Compactable: packs in the service that this
// store does not know (uploaded by another process, or by an earlier
// open after this one listed) are added. Packs are never dropped here:
// one uploaded by this store after the listing began would look gone.
func (s *Store) Relist() error {
	listed, err := s.objs.list()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for num, o := range listed {
		if _, ok := s.packs[num]; !ok && s.pending[num] == nil {
			s.packs[num] = o
		}
	}
	return nil
}

// DeadBytes implements blob.Compactable: the dead spans of packs still
// in the service, clipped to their sizes.
func (s *Store) DeadBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for num, o := range s.packs {
		for _, sp := range s.ledger.dead[num] {
			n += max(0, min(sp.End, o.size)-sp.Start)
		}
	}
	return n
}
