package chunker

import (
	"encoding/binary"
	"testing"
)

// randBytes returns n deterministic pseudo-random bytes. It uses its own
// splitmix64 stream rather than math/rand so that golden tests cannot be
// broken by a change in the standard library.
func randBytes(seed uint64, n int) []byte {
	b := make([]byte, n+8)
	s := seed
	for i := 0; i < n; i += 8 {
		s += 0x9e3779b97f4a7c15
		z := s
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		binary.LittleEndian.PutUint64(b[i:], z^z>>31)
	}
	return b[:n:n]
}

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
