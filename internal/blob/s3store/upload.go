package s3store

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
)

// startRound starts an upload round of pack p. s.mu is held.
func (s *Store) startRound(p *pack) {
	done := make(chan struct{})
	p.round, p.err = done, nil
	go s.upload(p, done)
}

// upload makes up to Attempts tries to PUT pack p, with growing pauses
// between them, then records the outcome. A pack whose every chunk was
// freed meanwhile is not uploaded at all.
func (s *Store) upload(p *pack, done chan struct{}) {
	s.uploadSlots <- struct{}{}
	s.mu.Lock()
	skip := s.ledger.allDead(p.num, s.alignUp(int64(len(p.buf))))
	s.mu.Unlock()
	var err error
	if !skip {
		pause := 100 * time.Millisecond
		for try := 1; ; try++ {
			if err = s.objs.put(p.num, p.buf, p.crc); err == nil || try == s.cfg.Attempts {
				break
			}
			time.Sleep(pause)
			pause = min(4*pause, 2*time.Second)
		}
	}
	<-s.uploadSlots

	s.mu.Lock()
	p.round = nil
	var deleteNow bool
	var claimed object
	switch {
	case skip:
		p.uploaded = true
		delete(s.pending, p.num)
		s.ledger.forget(p.num)
	case err == nil:
		p.uploaded = true
		delete(s.pending, p.num)
		s.packs[p.num] = object{size: int64(len(p.buf)), modTime: time.Now()}
		claimed, deleteNow = s.claimIfDead(p.num)
	default:
		p.err = err
	}
	s.recycle(p)
	close(done)
	s.changed.Broadcast()
	s.mu.Unlock()
	if deleteNow {
		s.deletePack(p.num, claimed)
	}
}

// Sync implements blob.Store: the open pack is sealed, and every pack
// sealed before is uploaded; a pack whose upload had failed gets one more
// round. Sync returns nil only when all of them are in the object store.
// Then the dead-span ledger is saved.
func (s *Store) Sync() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return fmt.Errorf("s3: sync: %w", os.ErrClosed)
	}
	return s.syncLocked()
}

// syncLocked is Sync; s.syncMu is held.
func (s *Store) syncLocked() error {
	s.mu.Lock()
	if s.open != nil && len(s.open.buf) > 0 {
		s.seal(s.open)
	}
	packs := make([]*pack, 0, len(s.pending))
	for _, p := range s.pending {
		packs = append(packs, p)
	}
	s.mu.Unlock()
	slices.SortFunc(packs, func(a, b *pack) int { return int(a.num) - int(b.num) })
	var errs []error
	for _, p := range packs {
		if err := s.waitUploaded(p); err != nil {
			errs = append(errs, err)
		}
	}
	s.mu.Lock()
	spans, gone := s.ledger.takeChanges()
	s.mu.Unlock()
	if len(spans) > 0 || len(gone) > 0 {
		if err := s.ledger.store.SaveDead(spans, gone); err != nil {
			s.mu.Lock()
			s.ledger.restore(spans, gone)
			s.mu.Unlock()
			errs = append(errs, fmt.Errorf("s3: save dead spans: %w", err))
		}
	}
	return errors.Join(errs...)
}

// SyncLocs implements blob.LocSyncer: the packs holding locs are sealed
// (the open one, if it holds one of them) and awaited, each retried once
// as Sync does; packs sealed before or after them that hold none of locs
// are not waited for, and the dead-span ledger is left to Sync. It
// returns nil only when every pack holding one of locs is in the object
// store, so metadata naming locs can commit (ordered mode).
func (s *Store) SyncLocs(locs []blob.Loc) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("s3: sync: %w", os.ErrClosed)
	}
	var packs []*pack
	seen := map[uint32]bool{}
	for _, l := range locs {
		if seen[l.Segment] {
			continue
		}
		seen[l.Segment] = true
		if o := s.open; o != nil && o.num == l.Segment && len(o.buf) > 0 {
			s.seal(o)
		}
		if p := s.pending[l.Segment]; p != nil {
			packs = append(packs, p)
		}
	}
	s.mu.Unlock()
	var errs []error
	for _, p := range packs {
		if err := s.waitUploaded(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// waitUploaded waits for the round of p under way, if any, and starts one
// more if p is still not uploaded; it returns that round's error.
func (s *Store) waitUploaded(p *pack) error {
	retried := false
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if p.uploaded {
			return nil
		}
		if p.round == nil {
			if retried {
				return p.err
			}
			s.startRound(p)
			retried = true
		}
		done := p.round
		s.mu.Unlock()
		<-done
		s.mu.Lock()
	}
}
