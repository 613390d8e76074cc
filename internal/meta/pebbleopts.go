package meta

import (
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"golang.org/x/sys/unix"
)

// memTableSize is 16 MiB, not Pebble's 4 MiB default, because of how a
// commit of many blocks meets the memtable. A batch whose memtable estimate
// (about 200 bytes a record) passes half the memtable is not copied in but
// flushed on its own, with the memtable beside it: with 4 MiB, every commit
// of a few MiB of 4 KiB blocks made two small level-0 tables, and each
// compaction of a few of them rewrote the whole chunk table (random hash
// keys overlap everything): 620 MB compacted for 85 MB of records when 1 GiB
// of an export was overwritten (72 MB with 32 MiB memtables); with 16 MiB
// the overwrite took a third less time and CPU. The memtables' memory is
// reserved from the block cache, so the two together stay within its size;
// 32 MiB memtables left a 64 MiB cache too little and were no faster
// (docs/BENCHMARKS.md, "Memtables sized for commits of many blocks"). The
// write-ahead log's preallocation stays small (softWAL).
const memTableSize = 16 << 20

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
// the old size) and 256 MiB (more gave nothing measurable:
// docs/BENCHMARKS.md, "Table blocks uncompressed, a block cache sized by
// the machine").
const (
	minBlockCache = 64 << 20
	maxBlockCache = 256 << 20
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
