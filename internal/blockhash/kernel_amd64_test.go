//go:build amd64 && !purego

package blockhash

import (
	"encoding/binary"
	"testing"

	"github.com/zeebo/blake3"
)

// The kernels against compress, BLAKE3's compression function written
// out from the specification, one lane at a time: a failure here says
// which kernel, lane and word went wrong, where TestSumMatchesBLAKE3 only
// says that a sum did.

// kernelSet is one width of kernels, seen through sixteen-lane arrays
// (the eight-lane ones use the first eight lanes).
type kernelSet struct {
	name   string
	lanes  int
	have   bool
	chunks func(ptrs *[16]*byte, blocks int, counters *[2][16]uint32, out *[8][16]uint32, flags, first, last uint32)
	parent func(msg *[16][16]uint32, flags uint32, out *[8][16]uint32)
}

var kernelSets = []kernelSet{
	{"AVX-512", 16, haveSixteen,
		func(ptrs *[16]*byte, blocks int, counters *[2][16]uint32, out *[8][16]uint32, flags, first, last uint32) {
			hashChunks16(ptrs, blocks, counters, out, flags, first, last, 0)
		},
		compress16},
	{"AVX2", 8, haveEight, chunks8Wide16, compress8Wide16},
}

func chunks8Wide16(ptrs *[16]*byte, blocks int, counters *[2][16]uint32, out *[8][16]uint32, flags, first, last uint32) {
	var p [8]*byte
	var c [2][8]uint32
	var o [8][8]uint32
	copy(p[:], ptrs[:8])
	copy(c[0][:], counters[0][:8])
	copy(c[1][:], counters[1][:8])
	hashChunks8(&p, blocks, &c, &o, flags, first, last)
	for w := range o {
		copy(out[w][:8], o[w][:])
	}
}

func compress8Wide16(msg *[16][16]uint32, flags uint32, out *[8][16]uint32) {
	var m [16][8]uint32
	var o [8][8]uint32
	for w := range m {
		copy(m[w][:], msg[w][:8])
	}
	compress8(&m, flags, &o)
	for w := range o {
		copy(out[w][:8], o[w][:])
	}
}

// eachKernelSet runs test for every width of kernels the CPU has.
func eachKernelSet(t *testing.T, test func(t *testing.T, ks kernelSet)) {
	for _, ks := range kernelSets {
		t.Run(ks.name, func(t *testing.T) {
			if !ks.have {
				t.Skipf("no %s", ks.name)
			}
			test(t, ks)
		})
	}
}

func TestParentKernel(t *testing.T) {
	eachKernelSet(t, func(t *testing.T, ks kernelSet) {
		for _, flags := range []uint32{parent, parent | rootNode} {
			var msg [16][16]uint32
			for w := range 16 {
				for k := range 16 {
					msg[w][k] = uint32(w*131 + k*7 + 1)
				}
			}
			var out [8][16]uint32
			ks.parent(&msg, flags, &out)
			for k := range ks.lanes {
				var m [16]uint32
				for w := range 16 {
					m[w] = msg[w][k]
				}
				want := compress(&iv, &m, 0, 64, flags)
				for w := range 8 {
					if out[w][k] != want[w] {
						t.Fatalf("flags %x lane %d word %d: %x want %x", flags, k, w, out[w][k], want[w])
					}
				}
			}
		}
	})
}

func TestChunkKernel(t *testing.T) {
	eachKernelSet(t, func(t *testing.T, ks kernelSet) {
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
		ks.chunks(&ptrs, 16, &counters, &out, 0, chunkStart, chunkEnd)
		for k := range ks.lanes {
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
	})
}

// TestSumEightMatchesBLAKE3 drives the eight-lane sum with every number
// of lanes, also where Sum itself takes the sixteen-lane one.
func TestSumEightMatchesBLAKE3(t *testing.T) {
	if !haveEight {
		t.Skip("no AVX2")
	}
	msgs := make([][]byte, 8)
	for i := range msgs {
		msgs[i] = make([]byte, Size)
		for j := range msgs[i] {
			msgs[i][j] = byte(i*7919 + j*31 + j>>9)
		}
	}
	for n := 1; n <= 8; n++ {
		lanes := make([]int, n)
		for k := range lanes {
			lanes[k] = (k * 3) % 8 // out of order, as a group's blocks may be
		}
		sums := make([][32]byte, n)
		sumEight(msgs, lanes, sums)
		for k, i := range lanes {
			if want := blake3.Sum256(msgs[i]); sums[k] != want {
				t.Fatalf("%d lanes: lane %d: %x want %x", n, k, sums[k], want)
			}
		}
	}
}

// BenchmarkKernelWidths hashes 1 MiB of 4 KiB blocks with each width of
// kernels this CPU has, and one by one, so that a machine with AVX-512
// measures the AVX2 kernels too.
func BenchmarkKernelWidths(b *testing.B) {
	run := make([]byte, 1<<20)
	for i := range run {
		run[i] = byte(i * 7)
	}
	var msgs [][]byte
	for off := 0; off < len(run); off += Size {
		msgs = append(msgs, run[off:off+Size])
	}
	lanes := make([]int, Lanes)
	var sums [Lanes][32]byte
	widths := []struct {
		name  string
		width int
		have  bool
		sum   func(lanes []int)
	}{
		{"sixteen", 16, haveSixteen, func(l []int) { sumSixteen(msgs, l, &sums) }},
		{"eight", 8, haveEight, func(l []int) { sumEight(msgs, l, sums[:len(l)]) }},
		{"one-by-one", 1, true, func(l []int) { sums[0] = blake3.Sum256(msgs[l[0]]) }},
	}
	for _, w := range widths {
		b.Run(w.name, func(b *testing.B) {
			if !w.have {
				b.Skipf("no %s kernels", w.name)
			}
			b.SetBytes(int64(len(run)))
			for range b.N {
				for lo := 0; lo < len(msgs); lo += w.width {
					for k := range w.width {
						lanes[k] = lo + k
					}
					w.sum(lanes[:w.width])
				}
			}
		})
	}
}
