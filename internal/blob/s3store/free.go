package s3store

import (
	"fmt"
	"os"

	"github.com/doppelfs/doppel/internal/blob"
)

// Free implements blob.Store. An object cannot be punched: the chunk's
// span (to the store's alignment) is recorded as dead in its pack, and a pack in the
// object store whose spans are all dead is deleted (one still uploading
// is checked when its upload ends). Freeing a location twice counts once.
func (s *Store) Free(loc blob.Loc) error {
	if err := s.checkLoc(loc); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("s3: free: %w", os.ErrClosed)
	}
	_, listed := s.packs[loc.Segment]
	if !listed && s.pending[loc.Segment] == nil && (s.open == nil || s.open.num != loc.Segment) && s.cfg.Grace == 0 {
		s.mu.Unlock()
		return fmt.Errorf("s3: free %+v: pack %d: %w", loc, loc.Segment, os.ErrNotExist)
	}
	// With Grace set, other hosts write packs this store has not listed:
	// the span is recorded all the same, and the pack is deleted once a
	// relisting finds it (compaction's, whose pass takes all-dead packs).
	s.ledger.add(loc.Segment, s.span(loc))
	var o object
	del := false
	if listed {
		o, del = s.claimIfDead(loc.Segment)
	}
	s.mu.Unlock()
	if del {
		return s.deletePack(loc.Segment, o)
	}
	return nil
}

// Reclaim implements blob.Store: everything of pack num (of an earlier
// session) outside the live spans is marked dead, and the pack is deleted
// if nothing is live. It returns the bytes newly marked dead. Packs
// younger than Grace are left alone: with several hosts, one may upload a
// pack and commit the metadata naming it only later.
func (s *Store) Reclaim(num uint32, live []blob.Span) (int64, error) {
	if num >= s.sessionStart {
		return 0, fmt.Errorf("s3: reclaim: pack %d belongs to the running session", num)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, fmt.Errorf("s3: reclaim: %w", os.ErrClosed)
	}
	o, ok := s.packs[num]
	if !ok {
		s.mu.Unlock()
		return 0, fmt.Errorf("s3: reclaim pack %d: %w", num, os.ErrNotExist)
	}
	if s.cfg.Grace > 0 && s.packAge(o) < s.cfg.Grace {
		s.mu.Unlock()
		return 0, nil
	}
	dead := blob.Unused([]blob.Span{{Start: 0, End: s.alignUp(o.size)}}, live)
	added := s.ledger.add(num, dead...)
	_, del := s.claimIfDead(num)
	s.mu.Unlock()
	if del {
		return added, s.deletePack(num, o)
	}
	return added, nil
}

// claimIfDead tells whether uploaded pack num is all dead, and if so
// takes it out of the listing so that exactly one caller deletes it.
// s.mu is held.
func (s *Store) claimIfDead(num uint32) (object, bool) {
	o, ok := s.packs[num]
	if _, retired := s.retired[num]; retired || !ok || !s.ledger.allDead(num, s.alignUp(o.size)) {
		return o, false // a retired pack waits for DeleteRetired
	}
	delete(s.packs, num)
	return o, true
}

// deletePack deletes the object of a claimed pack. If that fails, the
// pack is listed again (a later Free or Reclaim of it, or a sweep,
// deletes it).
func (s *Store) deletePack(num uint32, o object) error {
	err := s.objs.delete(num)
	s.staged.dropPack(num)
	if s.cache != nil {
		s.cache.dropPack(num)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.packs[num] = o
		return err
	}
	s.ledger.forget(num)
	s.gone.add(num)
	return nil
}
