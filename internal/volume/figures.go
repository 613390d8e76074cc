package volume

import (
	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/metrics"
)

// Figures gathers the volume's counters and space figures for a metrics
// scrape.
func (v *Volume) Figures() (metrics.Figures, error) {
	s, err := v.Space()
	if err != nil {
		return metrics.Figures{}, err
	}
	c, n := v.Engine.Counters(), v.NS.Counters()
	var trips, lockWait int64
	if pg, ok := v.Meta.(*pgstore.Store); ok {
		trips, lockWait = pg.RoundTrips(), int64(pg.TxLockWait())
	}
	return metrics.Figures{
		MetaRoundTrips: trips, TxLockWaitNs: lockWait, ForeignCommits: c.ForeignCommits,
		WrittenBytes: n.WrittenBytes, DeduplicatedBytes: c.DeduplicatedBytes, ZeroBytes: c.ZeroBytes,
		StoredBytes: c.StoredBytes, CacheHits: c.CacheHits, CacheMisses: c.CacheMisses,
		ReclaimedBytes: c.ReclaimedBytes, CompactedBytes: c.CompactedBytes,
		PacksRetired: c.PacksRetired, PacksDeleted: c.PacksDeleted, OverwrittenBlocks: c.OverwrittenBlocks,
		DirtyBytes: n.DirtyBytes, DirtyFiles: n.DirtyFiles, OpenFiles: n.OpenFiles,
		Space: metrics.Space{
			LogicalBytes: s.LogicalBytes, UniqueBytes: s.RawBytes, PhysicalBytes: s.PhysicalBytes,
			AllocatedBytes: s.AllocatedBytes, MetaBytes: s.MetaBytes, Segments: int64(s.Segments),
			Chunks: s.Chunks, OwnedBlocks: s.OwnedBlocks, Inodes: s.Inodes, DeadBytes: s.DeadBytes,
		},
	}, nil
}
