package chunker

import (
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

// BenchmarkCDC chunks 64 MiB of random data with the default policy.
func BenchmarkCDC(b *testing.B) {
	data := testutil.SeededBytes(1, 64<<20)
	c, err := New(DefaultPolicy())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for d := data; len(d) > 0; {
			d = d[c.Cut(0, d, true):]
		}
	}
}
