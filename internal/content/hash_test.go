package content

import (
	"slices"
	"testing"

	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// TestHashSpans: runs of 4 KiB chunks are cut into spans of at most
// sixteen, every other chunk is a span of its own, and the spans cover
// the group in order.
func TestHashSpans(t *testing.T) {
	for _, tc := range []struct {
		sizes []int
		want  [][2]int
	}{
		{nil, [][2]int{}},
		{[]int{100}, [][2]int{{0, 1}}},
		{[]int{4096, 4096, 100, 4096}, [][2]int{{0, 2}, {2, 3}, {3, 4}}},
		{slices.Repeat([]int{4096}, 35), [][2]int{{0, 16}, {16, 32}, {32, 35}}},
		{append(slices.Repeat([]int{4096}, 17), 8192, 4096), [][2]int{{0, 16}, {16, 17}, {17, 18}, {18, 19}}},
		// Other chunks together until a span holds longSpanBytes.
		{[]int{100, 8192, 4096, 8192, 8192}, [][2]int{{0, 2}, {2, 3}, {3, 5}}},
		{[]int{200 << 10, 50 << 10, 10 << 10, 64 << 10}, [][2]int{{0, 3}, {3, 4}}},
		{[]int{256 << 10, 1, 1}, [][2]int{{0, 1}, {1, 3}}},
	} {
		group := make([]*Prepared, len(tc.sizes))
		for i, n := range tc.sizes {
			group[i] = &Prepared{data: make([]byte, n)}
		}
		if got := hashSpans(group); !slices.Equal(got, tc.want) {
			t.Errorf("sizes %v: spans %v, want %v", tc.sizes, got, tc.want)
		}
	}
}

// TestHashSpanSetsEveryChunk: zero chunks are marked and not hashed,
// the others get the hash and check of their own bytes, whatever their
// size.
func TestHashSpanSetsEveryChunk(t *testing.T) {
	r := testutil.Rand(t)
	var ps []*Prepared
	for i := range 40 {
		size := 4096
		if i%7 == 3 {
			size = 1 + r.IntN(9000)
		}
		if i%11 == 4 {
			size = 1 + r.IntN(100<<10)
		}
		data := testutil.RandBytes(r, size)
		if i%5 == 0 {
			data = make([]byte, size)
		}
		ps = append(ps, &Prepared{data: data})
	}
	for _, s := range hashSpans(ps) {
		hashSpan(ps[s[0]:s[1]])
	}
	for i, p := range ps {
		zero := !slices.ContainsFunc(p.data, func(b byte) bool { return b != 0 })
		switch {
		case p.Zero != zero:
			t.Errorf("chunk %d: Zero %v, want %v", i, p.Zero, zero)
		case zero:
		case p.Hash != schema.Sum(p.data) || p.check != schema.CheckSum(p.data):
			t.Errorf("chunk %d (%d bytes): hash or check not those of its bytes", i, len(p.data))
		}
	}
}
