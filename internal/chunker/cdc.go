package chunker

import "math/bits"

// cdc is FastCDC (Xia et al., USENIX ATC 2016): a gear rolling hash; the
// first Min bytes of each chunk are not hashed, which both enforces the
// minimum and saves that much work; and normalized chunking at level 2, a
// mask with two more bits than log2(Avg) before Avg and two fewer after it,
// which pulls chunk sizes towards Avg far more tightly than a single mask.
//
// The gear hash shifts left once per byte, so bit k of the fingerprint
// depends only on the last k+1 bytes. The masks therefore take the top bits,
// which depend on (nearly) the whole 64-byte window; masks in the low bits
// would make boundaries depend on only a dozen or so bytes. Together with our
// own gear table this means boundaries differ from other FastCDC
// implementations, which does not matter: they need only be stable here.
type cdc struct {
	pol           Policy
	min, avg, max int
	maskS, maskL  uint64 // before and after avg
}

func newCDC(p Policy) *cdc {
	b := bits.TrailingZeros(uint(p.Avg)) // Avg is a power of two
	return &cdc{
		pol:   p,
		min:   p.Min,
		avg:   p.Avg,
		max:   p.Max,
		maskS: ^uint64(0) << (64 - (b + 2)),
		maskL: ^uint64(0) << (64 - (b - 2)),
	}
}

func (c *cdc) MaxSize() int   { return c.max }
func (c *cdc) Policy() Policy { return c.pol }

// Cut ignores off: content-defined boundaries must not depend on where the
// content sits, or shifted data would not deduplicate.
func (c *cdc) Cut(_ int64, data []byte, final bool) int {
	n := len(data)
	if n < c.max && n <= c.min {
		// No cut can fall at or before Min, so nothing is decided yet.
		if final {
			return n
		}
		return 0
	}
	end := min(n, c.max)
	normal := min(c.avg, end)
	i, fp := scan(data[c.min:normal], 0, c.maskS)
	if i >= 0 {
		return c.min + i
	}
	if i, _ = scan(data[normal:end], fp, c.maskL); i >= 0 {
		return normal + i
	}
	if end == c.max || final {
		return end
	}
	return 0
}

// scanGeneric feeds p into the gear fingerprint fp and returns the length
// of the shortest prefix of p after which fp&mask == 0, or -1 and the
// final fp. scan is this, or (scan_amd64.go) four bytes a step in
// assembly.
//
// The textbook recurrence fp = fp<<1 + gear[b] is one long dependency chain
// of two operations per byte. Taking two bytes per step as
// fp<<2 + (gear[b0]<<1 + gear[b1]) leaves one LEA per two bytes on the chain,
// because the bracket does not depend on fp; the fingerprint after b0 is
// computed off the chain only to be tested. Results are bit-for-bit those of
// the textbook loop (TestCDCMatchesReference), about 1.4x faster. The loop
// form lets the compiler drop the bounds checks inside it.
func scanGeneric(p []byte, fp, mask uint64) (int, uint64) {
	g := &gear
	i := 0
	for ; i < len(p)-1; i += 2 {
		g0, g1 := g[p[i]], g[p[i+1]]
		f1 := fp<<1 + g0
		fp = fp<<2 + (g0<<1 + g1)
		if f1&mask == 0 {
			return i + 1, 0
		}
		if fp&mask == 0 {
			return i + 2, 0
		}
	}
	if i < len(p) {
		fp = fp<<1 + g[p[i]]
		if fp&mask == 0 {
			return i + 1, 0
		}
	}
	return -1, fp
}
