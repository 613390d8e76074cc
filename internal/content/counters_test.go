package content

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

func TestCountersCountDedupZeroAndStoredBytes(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K")})
	r := rand.New(rand.NewPCG(1, 2))
	unique := testutil.RandBytes(r, 4*4096)
	// Four new blocks, two zero blocks, and a repeat of the first block.
	v.write(2, 0, bytes.Join([][]byte{unique, make([]byte, 2*4096), unique[:4096]}, nil))
	want := Counters{StoredBytes: 4 * 4096, ZeroBytes: 2 * 4096, DeduplicatedBytes: 4096}
	if got := v.e.Counters(); got != want {
		t.Fatalf("after the first write: %+v, want %+v", got, want)
	}
	v.write(3, 0, unique[:2*4096]) // already stored
	want.DeduplicatedBytes += 2 * 4096
	if got := v.e.Counters(); got != want {
		t.Fatalf("after writing stored blocks again: %+v, want %+v", got, want)
	}
}

func TestCountersCountCacheHitsAndMisses(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K")})
	data := testutil.RandBytes(rand.New(rand.NewPCG(3, 4)), 2*4096)
	v.write(2, 0, data)
	v.reopen() // an empty cache and fresh counters
	// Whole chunks are read straight into the reader's buffer, past the
	// cache; part of a chunk loads it into the cache.
	v.read(2, 0, 2*4096)    // two misses, nothing cached
	v.read(2, 100, 100)     // part of the first chunk: a miss, now cached
	v.read(2, 4000, 200)    // the first from the cache, the second loaded
	v.read(2, 50, 4100)     // both from the cache
	v.read(2, 3*4096, 4096) // past the data: a hole, no chunk read
	got := v.e.Counters()
	if got.CacheMisses != 4 || got.CacheHits != 3 {
		t.Errorf("cache hits %d misses %d; want 3 and 4", got.CacheHits, got.CacheMisses)
	}
}

func TestCountersCountReclaimedBytes(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K")})
	v.write(2, 0, testutil.RandBytes(rand.New(rand.NewPCG(5, 6)), 3*4096))
	v.do(func(tx *Tx) error {
		_, err := tx.Punch(2, 0, 2*4096)
		return err
	})
	v.e.Close() // the reclaimer punches what it holds before it stops
	if got := v.e.ReclaimedBytes(); got != 2*4096 {
		t.Errorf("reclaimed %d bytes after freeing two 4 KiB chunks, want %d", got, 2*4096)
	}
	if got := v.e.Counters().ReclaimedBytes; got != 2*4096 {
		t.Errorf("Counters().ReclaimedBytes %d, want %d", got, 2*4096)
	}
	v.e = nil // closed
}
