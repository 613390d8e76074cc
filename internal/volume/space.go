package volume

import (
	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/ops"
)

// Space reports the volume's space use.
func (v *Volume) Space() (ops.SpaceReport, error) {
	s := v.Engine.Stats()
	alloc, segs, err := v.Blobs.Usage()
	if err != nil {
		return ops.SpaceReport{}, err
	}
	r := ops.SpaceReport{
		Store: v.Dir, LogicalBytes: s.LogicalBytes, RawBytes: s.RawBytes, PhysicalBytes: s.PhysicalBytes,
		MetaBytes: v.Meta.DiskUsage(), AllocatedBytes: alloc, Segments: segs, Chunks: s.Chunks, Inodes: s.Inodes,
		OwnedBlocks: s.OwnedBlocks,
		DedupRatio:  1, CompressRatio: 1, ReclaimedBytes: v.Engine.ReclaimedBytes(),
	}
	if c, ok := v.Blobs.(blob.Compactable); ok {
		r.Packs, r.DeadBytes = true, c.DeadBytes()
	}
	if s.RawBytes > 0 {
		r.DedupRatio = float64(s.LogicalBytes) / float64(s.RawBytes)
	}
	if s.PhysicalBytes > 0 {
		r.CompressRatio = float64(s.RawBytes) / float64(s.PhysicalBytes)
	}
	return r, nil
}
