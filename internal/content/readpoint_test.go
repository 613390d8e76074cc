package content

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestSmallReadsOfAnExtentTakeOneLookup: a read inside one extent that
// starts where the read starts is served by a point lookup, without an
// iterator; other small reads (inside an extent, across extents, over
// holes) read the same bytes as before.
func TestSmallReadsOfAnExtentTakeOneLookup(t *testing.T) {
	for _, chunking := range []string{"fixed:4K", smallCDC} {
		t.Run(chunking, func(t *testing.T) {
			v := newEnv(t, Config{Chunking: policy(t, chunking)})
			rng := rand.New(rand.NewPCG(11, 12))
			const size = 256 << 10
			want := make([]byte, size)
			for _, w := range []struct{ off, n int64 }{{0, 64 << 10}, {96 << 10, 100 << 10}, {220 << 10, 20 << 10}} {
				data := testutil.RandBytes(rng, int(w.n))
				copy(want[w.off:], data)
				v.write(1, w.off, data)
			}
			if chunking == "fixed:4K" {
				r := &nextCounter{Reader: v.meta}
				buf := make([]byte, 4096)
				testutil.Check(t, v.e.ReadAtFrom(r, 1, 8192, buf))
				if r.iters != 0 || !bytes.Equal(buf, want[8192:12288]) {
					t.Fatalf("a 4 KiB read of a 4 KiB block: %d iterators, same bytes %v", r.iters, bytes.Equal(buf, want[8192:12288]))
				}
			}
			for range 500 {
				n := 1 + rng.Int64N(pointReadMax+4096)
				off := rng.Int64N(size - n + 1)
				if rng.IntN(2) == 0 {
					off &^= 4095
				}
				buf := make([]byte, n)
				testutil.Check(t, v.e.ReadAt(1, off, buf))
				if !bytes.Equal(buf, want[off:off+n]) {
					t.Fatalf("read of [%d, +%d) differs", off, n)
				}
			}
		})
	}
}
