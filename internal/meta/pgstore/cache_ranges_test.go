package pgstore

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// mergeSpans and the binary search over them drop exactly the keys some
// range holds: random ranges (overlapping, adjacent, empty, unbounded)
// against a pass over every range.
func TestDropRangesMatchesEveryRange(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	key := func() []byte { return fmt.Appendf(nil, "k%03d", r.IntN(200)) }
	for round := range 500 {
		var ranges []span
		for range 1 + r.IntN(8) {
			lo, hi := key(), key()
			if string(hi) < string(lo) {
				lo, hi = hi, lo
			}
			if r.IntN(10) == 0 {
				hi = nil
			}
			ranges = append(ranges, span{lo, hi})
		}
		c := newRecordCache(1 << 20)
		for i := range 200 {
			c.setLocked(fmt.Sprintf("k%03d", i), []byte("v"))
			c.setLocked(fmt.Sprintf("k%03dx", i), []byte("v")) // between two bounds
		}
		c.dropRangesLocked(ranges)
		for i := range 400 {
			k := fmt.Sprintf("k%03d", i/2)
			if i%2 == 1 {
				k += "x"
			}
			in := false
			for _, s := range ranges {
				in = in || s.holds(k)
			}
			if _, cached := c.entries[k]; cached == in {
				t.Fatalf("round %d (seed %d): ranges %q: key %s in a range %v, still cached %v", round, seed, ranges, k, in, cached)
			}
		}
	}
}
