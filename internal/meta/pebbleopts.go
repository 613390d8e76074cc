package meta

import (
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"golang.org/x/sys/unix"
)

// Memtables are at least 16 MiB, not Pebble's 4 MiB default, because of
// how a commit of many blocks meets the memtable. A batch whose memtable
// estimate (about 200 bytes a record) passes half the memtable is not
// copied in but flushed on its own, with the memtable beside it: with 4
// MiB, every commit of a few MiB of 4 KiB blocks made two small level-0
// tables, and each compaction of a few of them rewrote the whole chunk
// table (random hash keys overlap everything): 620 MB compacted for 85 MB
// of records when 1 GiB of an export was overwritten (72 MB with 32 MiB
// memtables); with 16 MiB the overwrite took a third less time and CPU
// (docs/BENCHMARKS.md, "Memtables sized for commits of many blocks").
//
// Where the block cache is large they grow to 64 MiB: an export written
// over rewrites the extent records of its whole range, every level-0
// table spans that range, and each compaction of level 0 rewrites the
// level below it whole, so four times the memtable means a quarter of
// those rewrites. A 4 GiB copy over an export's data took about 5 %
// less time (docs/BENCHMARKS.md, "Larger memtables where the cache is
// large"). Pebble reserves the memtables' memory from the block cache
// (up to three at once: the one written, one being flushed, one kept for
// reuse), so a memtable is at most a sixth of the cache, and the cache
// grows with it (maxBlockCache). The write-ahead log's preallocation
// stays small (softWAL).
const (
	minMemTable   = 16 << 20
	maxMemTable   = 64 << 20
	memTableShare = 6 // the cache holds at least this many memtables
)

// memTableSize is the memtable size for a block cache of cache bytes: the
// largest power of two up to maxMemTable that is at most a
// memTableShare-th of it, and never less than minMemTable.
func memTableSize(cache int64) uint64 {
	size := uint64(minMemTable)
	for size < maxMemTable && int64(2*size*memTableShare) <= cache {
		size *= 2
	}
	return size
}

// l0CompactionThreshold is 8 level-0 tables, not Pebble's 4, for the
// same commits: an export overwritten block by block rewrites the extent
// records of its whole range, every level-0 table spans that range, and
// each compaction of level 0 rewrites the level below it whole. Waiting
// for twice the tables halves those rewrites: a 4 GiB copy over an
// export's data took 6.2-6.5 s instead of 6.5-7.4 s, with 11 % less of
// the server's CPU, in four runs each (docs/BENCHMARKS.md, "Writes in
// place without their syncs"). Writes stop at three times that many, as
// by default.
const l0CompactionThreshold = 8

// The block cache holds the chunk table's blocks that a volume's writes
// look up at random (the records of chunks an overwrite drops) and the
// extent records random reads look up. A 4 GiB export of 4 KiB blocks has
// about 200 MB of tables; at 64 MiB (less the memtables) most of those
// lookups read a table block from the file. So the cache takes a share
// of the machine's memory, 1/64 of it, between 64 MiB (small machines keep
// the old size) and 384 MiB. For the blocks alone, more than 256 MiB gave
// nothing measurable (docs/BENCHMARKS.md, "Table blocks uncompressed, a
// block cache sized by the machine"); the rest is room for the larger
// memtables (above), whose memory Pebble takes from the cache.
const (
	minBlockCache = 64 << 20
	maxBlockCache = 384 << 20
)

// blockCacheSize is the block cache for a machine with total bytes of
// memory (0 when unknown).
func blockCacheSize(total uint64) int64 {
	if !offHeapCache {
		return minBlockCache
	}
	return min(max(int64(total/64), minBlockCache), maxBlockCache)
}

// totalMemory is the machine's memory in bytes, 0 if it cannot be told.
func totalMemory() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

// levelOptions sets what every level's tables hold besides the records,
// and when level 0 is compacted.
func levelOptions(opts *pebble.Options) {
	opts.L0CompactionThreshold = l0CompactionThreshold
	opts.L0StopWritesThreshold = 3 * l0CompactionThreshold
	for i := range opts.Levels {
		// Dedup lookups of new chunks miss; bloom filters answer them
		// without reading data blocks.
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		opts.Levels[i].FilterType = pebble.TableFilter
		// Most of the records by bytes are the chunk table's, keyed by
		// BLAKE3 hashes that do not compress: Snappy shrank a 4 GiB
		// export's tables by a sixth (213 to 179 MB) for 10-13 % of the
		// server's CPU when data was copied over it (compactions encode,
		// block-cache misses decode).
		opts.Levels[i].Compression = pebble.NoCompression
	}
}
