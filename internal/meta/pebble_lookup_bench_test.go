package meta_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/doppelfs/doppel/internal/meta"
)

// BenchmarkLookups compares GetMany with a Get per key, for keys that are
// there (a read's chunk records) and keys that are not (a write's dedup
// lookups of new chunks), in a store of 256 Ki chunk-like records, half
// compacted to the bottom level and half still above it.
func BenchmarkLookups(b *testing.B) {
	p, err := meta.OpenPebble(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	const records, batch = 256 << 10, 256
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() []byte {
		k := make([]byte, 33)
		k[0] = 'c'
		for i := 1; i < len(k); i += 8 {
			v := rng.Uint64()
			for j := 0; j < 8 && i+j < len(k); j++ {
				k[i+j] = byte(v >> (8 * j))
			}
		}
		return k
	}
	var present [][]byte
	write := func(n int) {
		for done := 0; done < n; done += 4096 {
			bt := p.NewBatch()
			for range 4096 {
				k := key()
				present = append(present, k)
				if err := bt.Set(k, make([]byte, 40)); err != nil {
					b.Fatal(err)
				}
			}
			if err := bt.Commit(false); err != nil {
				b.Fatal(err)
			}
		}
	}
	write(records / 2)
	if err := p.Compact(); err != nil {
		b.Fatal(err)
	}
	write(records / 2)
	for _, hits := range []bool{true, false} {
		keys := make([][]byte, batch)
		pick := func() {
			for i := range keys {
				if hits {
					keys[i] = present[rng.IntN(len(present))]
				} else {
					keys[i] = key()
				}
			}
		}
		b.Run(fmt.Sprintf("hits=%v/GetMany", hits), func(b *testing.B) {
			for b.Loop() {
				pick()
				if _, err := p.GetMany(keys); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("hits=%v/SeekGE", hits), func(b *testing.B) {
			for b.Loop() {
				pick()
				sorted := slices.Clone(keys)
				slices.SortFunc(sorted, bytes.Compare)
				it, err := p.NewIter([]byte{'c'}, []byte{'d'})
				if err != nil {
					b.Fatal(err)
				}
				for _, k := range sorted {
					it.SeekGE(k)
				}
				it.Close()
			}
		})
		b.Run(fmt.Sprintf("hits=%v/Get", hits), func(b *testing.B) {
			for b.Loop() {
				pick()
				for _, k := range keys {
					if _, err := p.Get(k); err != nil && err != meta.ErrNotFound {
						b.Fatal(err)
					}
				}
			}
		})
	}
	b.Log(p.LSM())
}
