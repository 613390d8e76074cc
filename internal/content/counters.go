package content

import "sync/atomic"

// Counters are the content layer's running totals since the engine
// started, for monitoring.
type Counters struct {
	DeduplicatedBytes int64 // prepared bytes in chunks already stored
	ZeroBytes         int64 // prepared bytes in all-zero chunks (holes)
	StoredBytes       int64 // bytes written to the blob store, after compression
	CacheHits         int64 // chunk reads served by the chunk cache
	CacheMisses       int64 // chunk reads that had to load (or wait for) the chunk
	ReclaimedBytes    int64 // stored bytes given back to the host
	CompactedBytes    int64 // live stored bytes compaction copied out of sparse packs
	PacksRetired      int64 // packs compaction rewrote and retired
	PacksDeleted      int64 // retired packs deleted after their grace
	OverwrittenBlocks int64 // disk images' blocks written over in place (inplace.go)
	// ForeignCommits counts transactions that found commits of other
	// processes (hosts) since this engine's last one.
	ForeignCommits int64
}

// counters are bumped with atomic adds on the data path and read at
// scrape time, so monitoring costs the data path no lock.
type counters struct {
	dedup, zero, stored  atomic.Int64
	cacheHits, cacheMiss atomic.Int64
	reclaimed            atomic.Int64
	compacted            atomic.Int64
	retired, deleted     atomic.Int64
	foreignCommits       atomic.Int64
	filterMisses         atomic.Int64 // dedup lookups the filter answered (dedupfilter.go)
	windowHits           atomic.Int64 // reads and hole searches a window answered (extent_window_cache.go)
	mapHits              atomic.Int64 // reads and hole searches an extent map answered (extent_map.go)
	overwritten          atomic.Int64 // blocks written over in place (inplace.go)
}

// Counters returns the running totals.
func (e *Engine) Counters() Counters {
	c := &e.counters
	return Counters{
		DeduplicatedBytes: c.dedup.Load(), ZeroBytes: c.zero.Load(), StoredBytes: c.stored.Load(),
		CacheHits: c.cacheHits.Load(), CacheMisses: c.cacheMiss.Load(), ReclaimedBytes: c.reclaimed.Load(),
		CompactedBytes: c.compacted.Load(), PacksRetired: c.retired.Load(), PacksDeleted: c.deleted.Load(),
		ForeignCommits: c.foreignCommits.Load(), OverwrittenBlocks: c.overwritten.Load(),
	}
}

// ReclaimedBytes reports the stored bytes given back to the host so far.
func (e *Engine) ReclaimedBytes() int64 { return e.counters.reclaimed.Load() }
