package chunker

import (
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{"cdc", "cdc:16K:64K:256K", "cdc:64:64:64", "cdc:1000:1K:1500",
		"fixed:4K", "fixed:512", "fixed:16M", "cdc:1K:3K:8K", "fixed:", "cdc:1K:2K:99999999999999999999K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePolicy(s)
		if err != nil {
			if p != (Policy{}) {
				t.Errorf("ParsePolicy(%q) returned %+v with error", s, p)
			}
			return
		}
		canon := p.String()
		q, err := ParsePolicy(canon)
		if err != nil || q != p {
			t.Fatalf("ParsePolicy(%q) = %+v; reparsing %q gave %+v, %v", s, p, canon, q, err)
		}
		if q.String() != canon {
			t.Fatalf("String not canonical: %q then %q", canon, q.String())
		}
		c, err := New(p)
		if err != nil {
			t.Fatalf("New(%v): %v", p, err)
		}
		if c.Policy() != p {
			t.Fatalf("New(%v).Policy() = %v", p, c.Policy())
		}
	})
}

// fuzzPolicies are small enough that fuzzer-sized inputs reach every branch.
var fuzzPolicies = []string{
	"cdc:64:64:64", "cdc:64:64:256", "cdc:64:128:256", "cdc:100:128:300",
	"cdc:64:256:1K", "cdc:256:1K:4K", "fixed:512", "fixed:1K", "cdc",
}

func FuzzCut(f *testing.F) {
	f.Add(uint8(0), int64(0), []byte("hello, world"), true)
	f.Add(uint8(2), int64(100), testutil.SeededBytes(1, 1000), false)
	f.Add(uint8(5), int64(0), testutil.SeededBytes(2, 5000), false)
	f.Add(uint8(6), int64(511), testutil.SeededBytes(3, 2000), true)
	chunkers := make([]Chunker, len(fuzzPolicies))
	for i, s := range fuzzPolicies {
		chunkers[i] = mustNew(f, s)
	}
	f.Fuzz(func(t *testing.T, which uint8, off int64, data []byte, final bool) {
		c := chunkers[int(which)%len(chunkers)]
		n := c.Cut(off, data, final)
		if n < 0 || n > len(data) || n > c.MaxSize() {
			t.Fatalf("%v: Cut(%d, %d bytes, %v) = %d", c.Policy(), off, len(data), final, n)
		}
		if final && len(data) > 0 && n == 0 {
			t.Fatalf("%v: Cut(%d, %d bytes, true) made no progress", c.Policy(), off, len(data))
		}
		// A boundary decided early must be the one decided with all data.
		nf := c.Cut(off, data, !final)
		if final {
			n, nf = nf, n
		}
		if n != 0 && n != nf {
			t.Fatalf("%v: Cut(%d, %d bytes): %d without final, %d with", c.Policy(), off, len(data), n, nf)
		}
		if c.Policy().Kind == "cdc" && nf != refCut(c.Policy(), data, true) {
			t.Fatalf("%v: Cut = %d, reference %d", c.Policy(), nf, refCut(c.Policy(), data, true))
		}
		// And it stays put when more data arrives.
		if n != 0 && len(data) > 1 {
			if m := c.Cut(off, data[:len(data)-1], false); m != 0 && m != n {
				t.Fatalf("%v: shorter data moved the boundary from %d to %d", c.Policy(), n, m)
			}
		}
	})
}
