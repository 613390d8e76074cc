package s3store

import (
	"fmt"

	"github.com/doppelfs/doppel/internal/blob"
)

var _ blob.Aligner = (*Store)(nil)

// Alignment implements blob.Aligner: where chunks start in packs. With
// Config.Unpadded they lie back to back (1): an object cannot be punched,
// so the padding to blob.Align that segment files need only cost bytes
// stored, sent and hashed (2.8 % of a 4 GiB file's, more for small
// files; docs/SHARED.md, "Packs without padding"). Otherwise
// blob.Align, as packs were written before.
func (s *Store) Alignment() int64 { return s.align }

// alignUp rounds n up to the store's alignment.
func (s *Store) alignUp(n int64) int64 { return blob.AlignUp(n, s.align) }

// span is the range of its pack that loc holds: what freeing it marks
// dead, exact in packs without padding. Taking it at blob.Align there
// would mark a live neighbour's bytes dead, and a pack could be deleted
// under it.
func (s *Store) span(loc blob.Loc) blob.Span { return blob.SpanAt(loc, s.align) }

// checkLoc rejects locations no Put of this store can have returned.
func (s *Store) checkLoc(loc blob.Loc) error {
	if !validRange(loc) || int64(loc.Offset)%s.align != 0 {
		return fmt.Errorf("s3: invalid location %+v: %w", loc, blob.ErrCorrupt)
	}
	return nil
}

// validRange tells whether loc can name bytes of a pack at all, at any
// alignment (the read cache's records hold ranges of either kind).
func validRange(loc blob.Loc) bool { return loc.Segment != 0 && loc.Offset <= 1<<62 }

// roundUp returns n rounded up to a multiple of blob.Align (the read
// cache's records and buffer classes).
func roundUp(n int64) int64 { return blob.AlignUp(n, blob.Align) }

// zeros is where a padded pack's padding to the next blob.Align comes from.
var zeros [blob.Align]byte
