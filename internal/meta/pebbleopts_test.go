package meta

import "testing"

func TestBlockCacheFollowsTheMachinesMemory(t *testing.T) {
	if !offHeapCache {
		t.Skip("built without cgo: the block cache is Go memory and keeps its smallest size")
	}
	for _, c := range []struct {
		total uint64
		want  int64
	}{
		{0, minBlockCache},       // unknown
		{2 << 30, minBlockCache}, // 32 MiB would be less than before
		{8 << 30, 128 << 20},     // 1/64
		{24 << 30, 384 << 20},    // 1/64, the cap
		{1 << 40, maxBlockCache},
	} {
		if got := blockCacheSize(c.total); got != c.want {
			t.Errorf("blockCacheSize(%d MiB) = %d MiB, want %d MiB", c.total>>20, got>>20, c.want>>20)
		}
	}
	if totalMemory() == 0 {
		t.Error("totalMemory: 0 on Linux, where sysinfo(2) tells it")
	}
}

func TestMemTablesGrowWithTheCache(t *testing.T) {
	for _, c := range []struct {
		cache int64
		want  uint64
	}{
		{minBlockCache, minMemTable}, // small machines keep 16 MiB
		{128 << 20, minMemTable},
		{191 << 20, minMemTable},
		{192 << 20, 32 << 20}, // a sixth of the cache
		{256 << 20, 32 << 20},
		{384 << 20, maxMemTable},
		{1 << 40, maxMemTable},
	} {
		if got := memTableSize(c.cache); got != c.want {
			t.Errorf("memTableSize(%d MiB cache) = %d MiB, want %d MiB", c.cache>>20, got>>20, c.want>>20)
		}
	}
	// The memtables Pebble holds at once (written, flushing, kept for
	// reuse) leave at least half the cache to table blocks.
	if size := memTableSize(maxBlockCache); 3*int64(size) > maxBlockCache/2 {
		t.Errorf("memtables of %d MiB take more than half of a %d MiB cache", size>>20, maxBlockCache>>20)
	}
}
