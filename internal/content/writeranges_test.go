package content

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestWriteRangesMatchesWriteChunks: writing many ranges in one call leaves
// the same extents, content and counts as WriteChunks on each in turn,
// including ranges that split one old extent several times and gaps
// between ranges that the scan of old extents seeks across.
func TestWriteRangesMatchesWriteChunks(t *testing.T) {
	for _, pol := range []string{"fixed:4K", "cdc:1K:4K:16K", "fixed:256K"} {
		for seed := uint64(1); seed <= 8; seed++ {
			t.Run(fmt.Sprint(pol, "/", seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 77))
				v := newEnv(t, Config{Chunking: policy(t, pol), VerifyReads: true})
				const size = 256 << 10
				base := testutil.RandBytes(r, size)
				v.write(2, 0, base)
				v.write(3, 0, base)
				want := slices.Clone(base)
				var ranges [][2]int
				for pos := r.IntN(5000); pos < size+20000; pos += 1 + r.IntN(30000) {
					n := 1 + r.IntN(20000)
					ranges = append(ranges, [2]int{pos, n})
					pos += n
					if r.IntN(5) == 0 {
						pos += seekGap // the scan seeks across this gap
					}
				}
				var many, each [][]*Prepared
				for _, rg := range ranges {
					data := testutil.RandBytes(r, rg[1])
					if need := rg[0] + rg[1]; need > len(want) {
						want = append(want, make([]byte, need-len(want))...)
					}
					copy(want[rg[0]:], data)
					for _, groups := range []*[][]*Prepared{&many, &each} {
						ps, _, err := v.e.Prepare(int64(rg[0]), data, true)
						if err != nil {
							t.Fatal(err)
						}
						*groups = append(*groups, ps)
					}
				}
				var mappedMany, mappedEach int64
				v.do(func(tx *Tx) (err error) {
					mappedMany, err = tx.WriteRanges(2, many)
					return err
				})
				v.do(func(tx *Tx) error {
					for _, g := range each {
						m, err := tx.WriteChunks(3, g)
						if err != nil {
							return err
						}
						mappedEach += m
					}
					return nil
				})
				if mappedMany != mappedEach {
					t.Errorf("mapped change %d, WriteChunks gives %d", mappedMany, mappedEach)
				}
				a, err := Extents(v.meta, 2, 0, math.MaxInt64)
				if err != nil {
					t.Fatal(err)
				}
				b, err := Extents(v.meta, 3, 0, math.MaxInt64)
				if err != nil {
					t.Fatal(err)
				}
				// Each file stored its own copy (both Prepares ran before
				// either commit), so only the hints may differ.
				if !slices.EqualFunc(a, b, func(x, y Piece) bool { return x.Off == y.Off && x.SameChunk(y.Extent) }) {
					t.Fatalf("extents differ: %d pieces from WriteRanges, %d from WriteChunks", len(a), len(b))
				}
				if got := v.read(2, 0, len(want)); !bytes.Equal(got, want) {
					t.Fatal("content after WriteRanges differs from what was written")
				}
				v.checkInvariants() // refcounts, stats
				v.reopen()
				v.checkInvariants()
			})
		}
	}
}
