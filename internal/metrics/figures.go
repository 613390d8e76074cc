package metrics

// Figures are the volume's counters and space figures at one moment. The
// totals count since the daemon started; the space figures describe the
// whole volume.
type Figures struct {
	WrittenBytes      int64 // accepted by write calls
	DeduplicatedBytes int64 // in chunks the volume already held: not stored again
	ZeroBytes         int64 // in all-zero chunks, kept as holes
	StoredBytes       int64 // written to segment files (after compression)
	CacheHits         int64 // chunk reads served by the chunk cache
	CacheMisses       int64 // chunk reads that loaded the chunk from a segment
	ReclaimedBytes    int64 // freed chunk space punched out of segment files
	CompactedBytes    int64 // live bytes compaction copied out of sparse packs (S3)
	PacksRetired      int64 // packs compaction rewrote
	PacksDeleted      int64 // rewritten packs deleted after their grace
	OverwrittenBlocks int64 // disk images' blocks written over in place

	// Shared volumes (metadata in PostgreSQL; zero otherwise).
	MetaRoundTrips int64 // requests sent to the metadata server and waited on
	TxLockWaitNs   int64 // time spent taking the volume's transaction lock
	ForeignCommits int64 // transactions that found other hosts' commits first

	DirtyBytes int64 // write data buffered in memory, not yet committed
	DirtyFiles int64 // files with buffered writes waiting for a flush
	OpenFiles  int64 // files with open handles

	Space Space
}

// Space is the volume's space report, as `doppel df` shows it.
type Space struct {
	LogicalBytes   int64 // what files hold, holes excluded
	UniqueBytes    int64 // distinct chunk data before compression
	PhysicalBytes  int64 // chunk data stored after compression
	AllocatedBytes int64 // what the segment files occupy on the host
	MetaBytes      int64 // what the metadata store occupies on the host
	DeadBytes      int64 // bytes of pack objects no chunk uses (S3: what compaction gives back)
	Segments       int64
	Chunks         int64
	OwnedBlocks    int64
	Inodes         int64
}
