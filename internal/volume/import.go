package volume

import (
	"context"
	"fmt"

	"github.com/doppelfs/doppel/internal/importer"
)

// Import copies the host tree src into the volume at dst (see package
// importer) and reports how much chunk data the volume stored for it.
// Disk images' blocks are deduplicated after the copy (a pass of the
// dedup of owned blocks, docs/BLOCK.md), so that the figure is what the
// volume keeps: an import on an unmounted volume ends before a pass in
// the background would.
func (v *Volume) Import(ctx context.Context, src, dst string, opt importer.Options) (importer.Summary, error) {
	before := v.Engine.Stats()
	opt.StoreDir = v.Dir
	s, err := importer.Import(ctx, v.NS, src, dst, opt)
	if err == nil && v.Engine.Stats().OwnedBlocks > before.OwnedBlocks {
		if _, derr := v.Engine.DedupOwned(ctx); derr != nil {
			s.Warnings = append(s.Warnings, fmt.Sprintf("dedup of the disk images' blocks: %v (a later pass in the mounted volume does it)", derr))
			s.WarnCount++
		}
	}
	s.StoredBytes = v.Engine.Stats().PhysicalBytes - before.PhysicalBytes
	return s, err
}
