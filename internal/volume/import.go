package volume

import (
	"context"

	"github.com/doppelfs/doppel/internal/importer"
)

// Import copies the host tree src into the volume at dst (see package
// importer) and reports how much chunk data the volume stored for it.
func (v *Volume) Import(ctx context.Context, src, dst string, opt importer.Options) (importer.Summary, error) {
	before := v.Engine.Stats().PhysicalBytes
	opt.StoreDir = v.Dir
	s, err := importer.Import(ctx, v.NS, src, dst, opt)
	s.StoredBytes = v.Engine.Stats().PhysicalBytes - before
	return s, err
}
