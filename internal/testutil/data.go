package testutil

import (
	"encoding/binary"
	"math/rand/v2"
)

// RandBytes returns n pseudo-random bytes drawn from r.
func RandBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n+8)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b[:n:n]
}

// SeededBytes returns n pseudo-random bytes fixed by seed. It uses its own
// splitmix64 stream rather than math/rand, so that golden tests (chunk
// boundaries) cannot be broken by a change in the standard library.
func SeededBytes(seed uint64, n int) []byte {
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
