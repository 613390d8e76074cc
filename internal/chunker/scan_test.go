package chunker

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// textbookScan is the gear scan one byte a step, as FastCDC states it.
func textbookScan(p []byte, fp, mask uint64) (int, uint64) {
	for i, b := range p {
		fp = fp<<1 + gear[b]
		if fp&mask == 0 {
			return i + 1, 0
		}
	}
	return -1, fp
}

var scanSeed = flag.Uint64("chunker.scanseed", 0, "seed of TestScanMatchesTextbook (0: from the clock)")

// scan and scanGeneric agree with the textbook loop for every length,
// starting fingerprint and cut position (narrow masks cut every few
// bytes, so cuts fall at every place of a four-byte step, and in the
// tail after the last whole step).
func TestScanMatchesTextbook(t *testing.T) {
	seed := *scanSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -chunker.scanseed=%d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, seed))
	data := testutil.RandBytes(r, 4096)
	for range 20000 {
		off := r.IntN(len(data))
		p := data[off : off+r.IntN(min(len(data)-off, 300)+1)]
		fp := r.Uint64()
		mask := ^uint64(0) << (64 - 1 - r.IntN(12))
		wi, wfp := textbookScan(p, fp, mask)
		if i, f := scan(p, fp, mask); i != wi || f != wfp {
			t.Fatalf("scan(%d bytes, fp %x, mask %x) = %d, %x; want %d, %x", len(p), fp, mask, i, f, wi, wfp)
		}
		if i, f := scanGeneric(p, fp, mask); i != wi || f != wfp {
			t.Fatalf("scanGeneric(%d bytes, fp %x, mask %x) = %d, %x; want %d, %x", len(p), fp, mask, i, f, wi, wfp)
		}
	}
}

// BenchmarkScan feeds 64 KiB through scan and scanGeneric with a mask
// that never cuts: the cost per byte of the chunker's inner loop.
func BenchmarkScan(b *testing.B) {
	data := testutil.SeededBytes(3, 64<<10)
	for _, bc := range []struct {
		name string
		f    func([]byte, uint64, uint64) (int, uint64)
	}{{"scan", scan}, {"generic", scanGeneric}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				bc.f(data, 0, ^uint64(0))
			}
		})
	}
}
