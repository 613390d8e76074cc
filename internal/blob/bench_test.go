package blob

import (
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

func BenchmarkPut64K(b *testing.B) {
	d := openT(b, b.TempDir(), Options{})
	defer d.Close()
	data := testutil.RandBytes(rand.New(rand.NewPCG(1, 1)), 64<<10)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := d.Put(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPut64KParallel(b *testing.B) {
	d := openT(b, b.TempDir(), Options{})
	defer d.Close()
	data := testutil.RandBytes(rand.New(rand.NewPCG(1, 1)), 64<<10)
	b.SetBytes(int64(len(data)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := d.Put(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
