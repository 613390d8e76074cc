package chunker

import (
	"fmt"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestStreaming feeds data the way a write buffer does: append a piece,
// take every chunk Cut can decide without final, and flush the rest with
// final at the end. The boundaries must match a one-pass cut.
func TestStreaming(t *testing.T) {
	data := testutil.SeededBytes(13, 3<<20)
	pieces := testutil.SeededBytes(14, 4096)
	for _, s := range append(testPolicies, "fixed:512", "fixed:64K") {
		for _, start := range []int64{0, 777} {
			c := mustNew(t, s)
			want := chunkAll(t, c, start, data)

			// data[pos:fed] is the buffered data not yet cut, starting at
			// file offset start+pos.
			var got []int
			pos, fed := 0, 0
			cut := func(final bool) {
				for pos < fed {
					n := c.Cut(start+int64(pos), data[pos:fed], final)
					if n == 0 {
						return
					}
					got = append(got, n)
					pos += n
				}
			}
			for i := 0; fed < len(data); i++ {
				// Pieces of 1 byte to ~128 KiB.
				fed = min(len(data), fed+1+int(pieces[i%len(pieces)])<<(i%10))
				cut(false)
			}
			cut(true)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s at %d: streaming gave %d chunks, one pass %d", s, start, len(got), len(want))
			}
		}
	}
}
