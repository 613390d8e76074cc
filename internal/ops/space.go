package ops

import "github.com/doppelfs/doppel/internal/content"

// SpaceReport is what `doppel df` shows.
type SpaceReport struct {
	Store          string `json:"store"`
	LogicalBytes   int64  `json:"logical_bytes"`
	RawBytes       int64  `json:"raw_bytes"`
	PhysicalBytes  int64  `json:"physical_bytes"`
	MetaBytes      int64  `json:"meta_bytes"`
	AllocatedBytes int64  `json:"allocated_bytes"`
	Segments       int    `json:"segments"`
	Chunks         int64  `json:"chunks"`
	// OwnedBlocks are disk images' blocks stored without a chunk record
	// (docs/BLOCK.md, "Owned blocks"), counted in PhysicalBytes too.
	OwnedBlocks    int64   `json:"owned_blocks"`
	Inodes         int64   `json:"inodes"`
	DedupRatio     float64 `json:"dedup_ratio"`
	CompressRatio  float64 `json:"compression_ratio"`
	ReclaimedBytes int64   `json:"reclaimed_bytes"`
	// Packs: the chunk data is in pack objects (S3), whose sizes
	// AllocatedBytes sums; DeadBytes of them no chunk uses any more,
	// which compaction gives back.
	Packs     bool  `json:"packs,omitempty"`
	DeadBytes int64 `json:"dead_bytes,omitempty"`
}

// Usage is the space a subtree uses ("doppel df PATH"). Chunk figures
// count each distinct chunk the subtree references once; the exclusive
// ones are what deleting the subtree would free.
type Usage struct {
	Path         string `json:"path"`
	Files        int64  `json:"files"`         // distinct inodes other than directories
	Dirs         int64  `json:"dirs"`          // directories, the top one included
	SizeBytes    int64  `json:"size_bytes"`    // sum of file sizes, holes included
	LogicalBytes int64  `json:"logical_bytes"` // bytes the files' extents map, holes excluded
	content.ChunkUsage
	// MetaBytes is the size of the subtree's metadata records (inodes,
	// entries, back-references, extents, xattrs) before the metadata
	// store's compression.
	MetaBytes     int64   `json:"meta_bytes"`
	DedupRatio    float64 `json:"dedup_ratio"`       // logical / raw
	CompressRatio float64 `json:"compression_ratio"` // raw / physical
}
