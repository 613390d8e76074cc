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
		{0, minBlockCache},        // unknown
		{2 << 30, minBlockCache},  // 32 MiB would be less than before
		{8 << 30, 128 << 20},      // 1/64
		{24 << 30, maxBlockCache}, // 384 MiB, capped
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
