package s3store

import (
	"fmt"

	"github.com/doppelfs/doppel/internal/blob"
)

var _ blob.Inspector = (*Store)(nil)

// SegmentSize implements blob.Inspector: the size of pack num's object,
// or of its bytes in memory while it is not uploaded yet.
func (s *Store) SegmentSize(num uint32) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.packs[num]; ok {
		return o.size, nil
	}
	if p := s.pending[num]; p != nil && !p.uploaded {
		return int64(len(p.buf)), nil
	}
	if s.open != nil && s.open.num == num {
		return int64(len(s.open.buf)), nil
	}
	s.mu.Unlock()
	// Another host may have uploaded it since this store listed the
	// packs: ask the object store.
	o, err := s.objs.head(num)
	s.mu.Lock()
	if err != nil {
		return 0, err
	}
	if _, ok := s.packs[num]; !ok && s.pending[num] == nil {
		s.packs[num] = o
	}
	return o.size, nil
}

// SegmentData implements blob.Inspector: the pack's extent (to the
// store's alignment)
// less the spans the dead-span ledger records.
func (s *Store) SegmentData(num uint32) ([]blob.Span, error) {
	size, err := s.SegmentSize(num)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return blob.Unused([]blob.Span{{Start: 0, End: s.alignUp(size)}}, s.ledger.dead[num]), nil
}

// SegmentName implements blob.Inspector: the pack's object.
func (s *Store) SegmentName(num uint32) string {
	return fmt.Sprintf("s3://%s/%s", s.objs.bucket, s.objs.key(num))
}
