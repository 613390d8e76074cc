//go:build amd64 && !purego

package blockhash

import (
	"encoding/binary"
	"testing"
)

// The kernels against compress, BLAKE3's compression function written
// out from the specification, one lane at a time: a failure here says
// which kernel, lane and word went wrong, where TestSumMatchesBLAKE3 only
// says that a sum did.

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
		want := compress(&iv, &m, 0, 64, parent)
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
	var counters [2][16]uint32
	for k := range 16 {
		counters[0][k], counters[1][k] = uint32(3+k), uint32(k%2)
	}
	var out [8][16]uint32
	hashChunks16(&ptrs, 16, &counters, &out, 0, chunkStart, chunkEnd, 0)
	for k := range 16 {
		cv := iv
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
			cv = compress(&cv, &m, uint64(3+k)|uint64(k%2)<<32, 64, fl)
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
