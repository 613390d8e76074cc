package content

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/schema"
)

// TestReadaheadFollowsSequentialReaders reads a file in 128 KiB steps and
// checks that the chunks ahead of the reader get loaded: the window moves
// with the reader, not only at the start.
func TestReadaheadFollowsSequentialReaders(t *testing.T) {
	const step, size = 128 << 10, 8 << 20
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K"), CacheChunks: 1024})
	data := randBytes(rand.New(rand.NewPCG(9, 9)), size)
	v.write(2, 0, data)
	v.reopen() // an empty cache
	cached := func(off int64) bool {
		_, ok := v.e.cache.get(schema.Sum(data[off : off+64<<10]))
		return ok
	}
	for off := int64(0); off < 3<<20; off += step {
		v.read(2, off, step)
	}
	// After reading 3 MiB sequentially, the next MiB must be loaded (or
	// loading) without anyone asking for it.
	for off := int64(3 << 20); off < 4<<20; off += 64 << 10 {
		waitFor(t, fmt.Sprint("readahead of the chunk at ", off), func() bool { return cached(off) })
	}
	// A random reader gets no readahead.
	v.reopen()
	v.read(2, 6<<20, step)
	v.read(2, 1<<20, step)
	if cached(1<<20 + step + 64<<10) {
		t.Error("a jump started readahead")
	}
}
