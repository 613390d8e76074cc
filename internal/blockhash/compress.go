package blockhash

import (
	"encoding/binary"
	"math/bits"
)

// BLAKE3's domain flags.
const (
	chunkStart = 1 << 0
	chunkEnd   = 1 << 1
	parent     = 1 << 2
	rootNode   = 1 << 3
)

const (
	chunkSize      = 1024
	blockSize      = 64
	blocksPerChunk = chunkSize / blockSize
)

// iv is BLAKE3's IV (that of SHA-256).
var iv = [8]uint32{0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19}

// compress is BLAKE3's compression function, one block at a time, written
// out from the specification. The kernels do the bulk; this does the
// short last chunk of a long message, and is the kernels' reference in
// their tests.
func compress(cv *[8]uint32, m *[16]uint32, counter uint64, blen, flags uint32) [8]uint32 {
	// Locals rather than an array, so that the compiler keeps the state
	// in registers: three times faster.
	v0, v1, v2, v3, v4, v5, v6, v7 := cv[0], cv[1], cv[2], cv[3], cv[4], cv[5], cv[6], cv[7]
	v8, v9, v10, v11 := iv[0], iv[1], iv[2], iv[3]
	v12, v13, v14, v15 := uint32(counter), uint32(counter>>32), blen, flags
	m0, m1, m2, m3, m4, m5, m6, m7 := m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]
	m8, m9, m10, m11, m12, m13, m14, m15 := m[8], m[9], m[10], m[11], m[12], m[13], m[14], m[15]
	for range 7 {
		v0, v4, v8, v12 = g(v0, v4, v8, v12, m0, m1)
		v1, v5, v9, v13 = g(v1, v5, v9, v13, m2, m3)
		v2, v6, v10, v14 = g(v2, v6, v10, v14, m4, m5)
		v3, v7, v11, v15 = g(v3, v7, v11, v15, m6, m7)
		v0, v5, v10, v15 = g(v0, v5, v10, v15, m8, m9)
		v1, v6, v11, v12 = g(v1, v6, v11, v12, m10, m11)
		v2, v7, v8, v13 = g(v2, v7, v8, v13, m12, m13)
		v3, v4, v9, v14 = g(v3, v4, v9, v14, m14, m15)
		// BLAKE3's message permutation.
		m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15 =
			m2, m6, m3, m10, m7, m0, m4, m13, m1, m11, m12, m5, m9, m14, m15, m8
	}
	return [8]uint32{v0 ^ v8, v1 ^ v9, v2 ^ v10, v3 ^ v11, v4 ^ v12, v5 ^ v13, v6 ^ v14, v7 ^ v15}
}

// g is BLAKE3's quarter round.
func g(a, b, c, d, x, y uint32) (uint32, uint32, uint32, uint32) {
	a += b + x
	d = bits.RotateLeft32(d^a, -16)
	c += d
	b = bits.RotateLeft32(b^c, -12)
	a += b + y
	d = bits.RotateLeft32(d^a, -8)
	c += d
	b = bits.RotateLeft32(b^c, -7)
	return a, b, c, d
}

// chunkCV is the chaining value of a chunk of 1 to chunkSize bytes that
// is not the root: the chunk numbered counter of a longer message.
func chunkCV(chunk []byte, counter uint64) [8]uint32 {
	cv := iv
	for off := 0; off < len(chunk); off += blockSize {
		var block [blockSize]byte
		n := copy(block[:], chunk[off:])
		var m [16]uint32
		for w := range m {
			m[w] = binary.LittleEndian.Uint32(block[4*w:])
		}
		var flags uint32
		if off == 0 {
			flags |= chunkStart
		}
		if off+n == len(chunk) {
			flags |= chunkEnd
		}
		cv = compress(&cv, &m, counter, uint32(n), flags)
	}
	return cv
}
