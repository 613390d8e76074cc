//go:build amd64 && !purego

package blockhash

import (
	"encoding/binary"
	"math/bits"
	"testing"
)

// The kernels against compressRef, BLAKE3's compression function written
// out one lane at a time from the specification: a failure here says
// which kernel, lane and word went wrong, where TestSumMatchesBLAKE3 only
// says that a sum did.

var ivRef = [8]uint32{0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19}
var permRef = [16]int{2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8}

func gRef(s *[16]uint32, a, b, c, d int, x, y uint32) {
	s[a] += s[b] + x
	s[d] = bits.RotateLeft32(s[d]^s[a], -16)
	s[c] += s[d]
	s[b] = bits.RotateLeft32(s[b]^s[c], -12)
	s[a] += s[b] + y
	s[d] = bits.RotateLeft32(s[d]^s[a], -8)
	s[c] += s[d]
	s[b] = bits.RotateLeft32(s[b]^s[c], -7)
}

func compressRef(cv [8]uint32, m [16]uint32, counter uint64, blen, flags uint32) [8]uint32 {
	s := [16]uint32{cv[0], cv[1], cv[2], cv[3], cv[4], cv[5], cv[6], cv[7], ivRef[0], ivRef[1], ivRef[2], ivRef[3], uint32(counter), uint32(counter >> 32), blen, flags}
	for r := 0; r < 7; r++ {
		gRef(&s, 0, 4, 8, 12, m[0], m[1])
		gRef(&s, 1, 5, 9, 13, m[2], m[3])
		gRef(&s, 2, 6, 10, 14, m[4], m[5])
		gRef(&s, 3, 7, 11, 15, m[6], m[7])
		gRef(&s, 0, 5, 10, 15, m[8], m[9])
		gRef(&s, 1, 6, 11, 12, m[10], m[11])
		gRef(&s, 2, 7, 8, 13, m[12], m[13])
		gRef(&s, 3, 4, 9, 14, m[14], m[15])
		var n [16]uint32
		for i := range n {
			n[i] = m[permRef[i]]
		}
		m = n
	}
	var out [8]uint32
	for i := range out {
		out[i] = s[i] ^ s[i+8]
	}
	return out
}

func TestParentKernel(t *testing.T) {
	skipWithoutKernels(t)
	var msg [16][16]uint32
	for w := range 16 {
		for k := range 16 {
			msg[w][k] = uint32(w*131 + k*7 + 1)
		}
	}
	var out [8][16]uint32
	compress16(&msg, parent, &out)
	for k := range 16 {
		var m [16]uint32
		for w := range 16 {
			m[w] = msg[w][k]
		}
		want := compressRef(ivRef, m, 0, 64, parent)
		for w := range 8 {
			if out[w][k] != want[w] {
				t.Fatalf("lane %d word %d: %x want %x", k, w, out[w][k], want[w])
			}
		}
	}
}

func TestChunkKernel(t *testing.T) {
	skipWithoutKernels(t)
	data := make([]byte, 16*1024)
	for i := range data {
		data[i] = byte(i*13 + i>>8)
	}
	var ptrs [16]*byte
	for k := range ptrs {
		ptrs[k] = &data[k*1024]
	}
	var out [8][16]uint32
	hashChunks16(&ptrs, 16, 3, &out, 0, chunkStart, chunkEnd)
	for k := range 16 {
		cv := ivRef
		for b := range 16 {
			var m [16]uint32
			for w := range 16 {
				m[w] = binary.LittleEndian.Uint32(data[k*1024+b*64+4*w:])
			}
			var fl uint32
			if b == 0 {
				fl |= chunkStart
			}
			if b == 15 {
				fl |= chunkEnd
			}
			cv = compressRef(cv, m, 3, 64, fl)
		}
		for w := range 8 {
			if out[w][k] != cv[w] {
				t.Fatalf("lane %d word %d: %x want %x", k, w, out[w][k], cv[w])
			}
		}
	}
}

func skipWithoutKernels(t *testing.T) {
	if !haveSixteen {
		t.Skip("no AVX-512F")
	}
}
