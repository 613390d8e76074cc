package chunker

import (
	"testing"
)

// chunkAll cuts data in one pass and returns the chunk lengths.
func chunkAll(t testing.TB, c Chunker, off int64, data []byte) []int {
	t.Helper()
	var sizes []int
	for len(data) > 0 {
		n := c.Cut(off, data, true)
		if n <= 0 || n > len(data) || n > c.MaxSize() {
			t.Fatalf("Cut(%d, %d bytes, true) = %d", off, len(data), n)
		}
		sizes = append(sizes, n)
		data = data[n:]
		off += int64(n)
	}
	return sizes
}

func mustNew(t testing.TB, s string) Chunker {
	t.Helper()
	p, err := ParsePolicy(s)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
