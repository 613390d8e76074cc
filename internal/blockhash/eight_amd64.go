//go:build amd64 && !purego

package blockhash

import (
	"encoding/binary"
	"unsafe"

	"github.com/zeebo/blake3"
	"golang.org/x/sys/cpu"
)

// haveEight says whether the AVX2 kernels can run (cpu checks that the OS
// saves the YMM state too).
var haveEight = cpu.X86.HasAVX2

// hashChunks8 is hashChunks16 eight lanes wide (AVX2), without prefetch.
//
//go:noescape
func hashChunks8(ptrs *[8]*byte, blocks int, counters *[2][8]uint32, out *[8][8]uint32, flags, first, last uint32)

// compress8 is compress16 eight lanes wide (AVX2).
//
//go:noescape
func compress8(msg *[16][8]uint32, flags uint32, out *[8][8]uint32)

// minLanesEight is the fewest blocks worth an eight-lane pass. On an
// AMD EPYC (Zen 3) BenchmarkSum measured 3.0–3.5 GB/s eight at a time
// against 1.3–1.4 GB/s one by one: a pass costs what three blocks and a
// third one by one do.
const minLanesEight = 4

// sumBlocks puts into sums[k] the hash of the Size-byte block
// msgs[lanes[k]], for up to Lanes lanes: sixteen at a time with AVX-512,
// else eight at a time, and a remainder too short for a pass one by one.
func sumBlocks(msgs [][]byte, lanes []int, sums *[Lanes][32]byte) {
	if haveSixteen {
		sumSixteen(msgs, lanes, sums)
		return
	}
	for lo := 0; lo < len(lanes); lo += 8 {
		hi := min(lo+8, len(lanes))
		if hi-lo >= minLanesEight {
			sumEight(msgs, lanes[lo:hi], sums[lo:hi])
			continue
		}
		for k := lo; k < hi; k++ {
			sums[k] = blake3.Sum256(msgs[lanes[k]])
		}
	}
}

// sumEight is sumSixteen eight lanes wide: sums[k] gets the hash of
// msgs[lanes[k]], for up to eight lanes.
func sumEight(msgs [][]byte, lanes []int, sums [][32]byte) {
	var cvs [4][8][8]uint32
	for c := range cvs {
		var ptrs [8]*byte
		var counters [2][8]uint32
		for k := range ptrs {
			ptrs[k] = &msgs[lanes[min(k, len(lanes)-1)]][c*chunkSize]
			counters[0][k] = uint32(c)
		}
		hashChunks8(&ptrs, blocksPerChunk, &counters, &cvs[c], 0, chunkStart, chunkEnd)
	}
	var parents [2][8][8]uint32
	compress8((*[16][8]uint32)(unsafe.Pointer(&cvs[0])), parent, &parents[0])
	compress8((*[16][8]uint32)(unsafe.Pointer(&cvs[2])), parent, &parents[1])
	var root [8][8]uint32
	compress8((*[16][8]uint32)(unsafe.Pointer(&parents[0])), parent|rootNode, &root)
	for k := range lanes {
		for w := range 8 {
			binary.LittleEndian.PutUint32(sums[k][4*w:], root[w][k])
		}
	}
}
