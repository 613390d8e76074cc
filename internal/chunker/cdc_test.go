package chunker

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/bits"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

// refCut is the textbook FastCDC loop, one byte at a time, against which
// the optimized Cut is checked.
func refCut(p Policy, data []byte, final bool) int {
	n := len(data)
	if n < p.Max && n <= p.Min {
		if final {
			return n
		}
		return 0
	}
	end := min(n, p.Max)
	b := bits.TrailingZeros(uint(p.Avg))
	maskS := ^uint64(0) << (64 - b - 2)
	maskL := ^uint64(0) << (64 - b + 2)
	var fp uint64
	for i := p.Min; i < end; i++ {
		fp = fp<<1 + gear[data[i]]
		mask := maskL
		if i < p.Avg {
			mask = maskS
		}
		if fp&mask == 0 {
			return i + 1
		}
	}
	if end == p.Max || final {
		return end
	}
	return 0
}

var testPolicies = []string{
	"cdc",
	"cdc:64:64:64",
	"cdc:64:64:1K",
	"cdc:64:256:1K",
	"cdc:100:128:130",
	"cdc:2K:8K:64K",
	"cdc:4K:4K:4K",
	"cdc:1M:1M:16M",
}

func TestCDCMatchesReference(t *testing.T) {
	data := testutil.SeededBytes(7, 4<<20)
	for _, s := range testPolicies {
		c := mustNew(t, s)
		p := c.Policy()
		for _, final := range []bool{true, false} {
			for d := data; len(d) > 0; {
				want := refCut(p, d, final)
				// Also probe short data around the decision points.
				for _, k := range []int{1, p.Min - 1, p.Min, p.Min + 1, p.Avg, p.Avg + 1, p.Max - 1, p.Max} {
					if k > 0 && k <= len(d) {
						if got, w := c.Cut(0, d[:k], final), refCut(p, d[:k], final); got != w {
							t.Fatalf("%s: Cut(%d bytes, %v) = %d, want %d", s, k, final, got, w)
						}
					}
				}
				got := c.Cut(0, d, final)
				if got != want {
					t.Fatalf("%s: Cut(%d bytes, %v) = %d, want %d", s, len(d), final, got, want)
				}
				if got == 0 {
					break
				}
				d = d[got:]
			}
		}
	}
}

// TestCDCGolden pins boundaries on fixed input. If it fails, chunking has
// changed and new data will no longer deduplicate against old: do not
// "fix" the expected values.
func TestCDCGolden(t *testing.T) {
	data := testutil.SeededBytes(42, 1<<20)
	got := chunkAll(t, mustNew(t, "cdc"), 0, data)
	want := []int{76342, 78229, 66241, 24654, 67806, 96927, 75671, 42031, 69301, 69861, 80932, 86137, 64780, 75196, 67541, 6927}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("default policy boundaries:\n got %v\nwant %v", got, want)
	}

	// Small chunks give many boundaries; pin them by digest.
	sizes := chunkAll(t, mustNew(t, "cdc:64:256:1K"), 0, data)
	h := sha256.Sum256([]byte(fmt.Sprint(sizes)))
	if got, want := hex.EncodeToString(h[:]), "85b23c048fd9254ce643c4d3b39b7e9330f88936a3160bb3f6e38f63078e48c8"; got != want {
		t.Errorf("cdc:64:256:1K: %d chunks, digest %s, want %s", len(sizes), got, want)
	}
}

func TestCDCSizes(t *testing.T) {
	data := testutil.SeededBytes(3, 16<<20)
	for _, s := range testPolicies {
		c := mustNew(t, s)
		p := c.Policy()
		sizes := chunkAll(t, c, 0, data)
		total := 0
		for i, n := range sizes {
			total += n
			if i < len(sizes)-1 && (n < p.Min || n > p.Max) {
				t.Errorf("%s: chunk %d has size %d", s, i, n)
			}
		}
		if len(sizes) < 2 {
			continue
		}
		mean := float64(total) / float64(len(sizes))
		t.Logf("%s: %d chunks, mean %.0f", s, len(sizes), mean)
		if mean < float64(p.Avg)/2 || mean > float64(p.Avg)*2 {
			t.Errorf("%s: mean chunk size %.0f, want within 2x of %d", s, mean, p.Avg)
		}
	}
}

// TestCDCEdits checks the point of content-defined chunking: an insertion
// or deletion changes only the chunks around it.
func TestCDCEdits(t *testing.T) {
	data := testutil.SeededBytes(5, 8<<20)
	mid := len(data) / 2
	edits := map[string][]byte{
		"insert1":  concat(data[:mid], []byte{0x5a}, data[mid:]),
		"insert17": concat(data[:mid], testutil.SeededBytes(9, 17), data[mid:]),
		"delete1":  concat(data[:mid], data[mid+1:]),
		"delete9":  concat(data[:mid], data[mid+9:]),
		"replace":  concat(data[:mid], testutil.SeededBytes(11, 4), data[mid+4:]),
		"prepend":  concat([]byte("hello"), data),
		"twoEdits": concat(data[:mid/2], data[mid/2+3:mid], []byte("xyz"), data[mid:]),
	}
	c := mustNew(t, "cdc")
	orig := chunkSet(t, c, data)
	for name, edited := range edits {
		set := chunkSet(t, c, edited)
		shared := 0
		for h := range set {
			if orig[h] {
				shared++
			}
		}
		frac := float64(shared) / float64(len(set))
		t.Logf("%s: %d of %d chunks shared", name, shared, len(set))
		if frac < 0.95 || len(set)-shared > 4 {
			t.Errorf("%s: only %d of %d chunks shared", name, shared, len(set))
		}
	}
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func chunkSet(t *testing.T, c Chunker, data []byte) map[[32]byte]bool {
	set := map[[32]byte]bool{}
	for _, n := range chunkAll(t, c, 0, data) {
		set[sha256.Sum256(data[:n])] = true
		data = data[n:]
	}
	return set
}

func TestCDCIgnoresOffset(t *testing.T) {
	data := testutil.SeededBytes(8, 1<<20)
	c := mustNew(t, "cdc:1K:4K:16K")
	a := chunkAll(t, c, 0, data)
	b := chunkAll(t, c, 12345, data)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("boundaries depend on the offset")
	}
}

func TestCDCZeros(t *testing.T) {
	// Constant data has no content-defined boundary: every chunk is Max.
	c := mustNew(t, "cdc:1K:4K:16K")
	sizes := chunkAll(t, c, 0, make([]byte, 100000))
	for i, n := range sizes[:len(sizes)-1] {
		if n != 16<<10 {
			t.Fatalf("chunk %d: size %d", i, n)
		}
	}
}

func TestCutDoesNotAllocate(t *testing.T) {
	data := testutil.SeededBytes(1, 1<<20)
	for _, s := range []string{"cdc", "fixed:4K"} {
		c := mustNew(t, s)
		if n := testing.AllocsPerRun(10, func() { chunkAll(t, c, 0, data[:0]); c.Cut(1, data, false) }); n != 0 {
			t.Errorf("%s: %v allocations per Cut", s, n)
		}
	}
}

func TestEmpty(t *testing.T) {
	for _, s := range append(testPolicies, "fixed:512") {
		c := mustNew(t, s)
		for _, final := range []bool{false, true} {
			if n := c.Cut(0, nil, final); n != 0 {
				t.Errorf("%s: Cut(empty, %v) = %d", s, final, n)
			}
		}
	}
}
