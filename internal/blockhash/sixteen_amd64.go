//go:build amd64 && !purego

package blockhash

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// haveSixteen says whether the kernels can run: they use AVX-512F only
// (ZMM registers, VPRORD, unpacks and VSHUFI32X4), and cpu checks that
// the OS saves the ZMM state too.
var haveSixteen = cpu.X86.HasAVX512F

// hashChunks16 sets out[w][k] to word w of the chaining value of the
// chunk of blocks 64-byte blocks at ptrs[k], with chunk counter
// counters[1][k]<<32 | counters[0][k]; first and last are the flags of
// its first and last block besides flags. It prefetches the cache lines
// ahead bytes past those it reads (0: none).
//
//go:noescape
func hashChunks16(ptrs *[16]*byte, blocks int, counters *[2][16]uint32, out *[8][16]uint32, flags, first, last uint32, ahead int)

// compress16 sets out[w][k] to word w of the compression of the block
// whose word j is msg[j][k], from the IV with counter 0: a parent node.
//
//go:noescape
func compress16(msg *[16][16]uint32, flags uint32, out *[8][16]uint32)

// sumSixteen puts into sums[k] the hash of the Size-byte block
// msgs[lanes[k]], for up to sixteen lanes; unused lanes repeat the last
// block.
func sumSixteen(msgs [][]byte, lanes []int, sums *[Lanes][32]byte) {
	// Chaining values, chunk by chunk, then parent by parent: each
	// [8][16]uint32 holds word w of lane k at [w][k], so two of them side
	// by side are the sixteen message words of the parent above them.
	var cvs [4][8][16]uint32
	for c := range cvs {
		var ptrs [Lanes]*byte
		var counters [2][Lanes]uint32
		for k := range ptrs {
			ptrs[k] = &msgs[lanes[min(k, len(lanes)-1)]][c*chunkSize]
			counters[0][k] = uint32(c)
		}
		// No prefetch: the hardware follows sixteen blocks read in order,
		// and prefetches of the next lanes' blocks made the sum slower
		// (BenchmarkSum, 64 MiB: 5.3 against 4.7 GB/s).
		hashChunks16(&ptrs, blocksPerChunk, &counters, &cvs[c], 0, chunkStart, chunkEnd, 0)
	}
	var parents [2][8][16]uint32
	compress16((*[16][16]uint32)(unsafe.Pointer(&cvs[0])), parent, &parents[0])
	compress16((*[16][16]uint32)(unsafe.Pointer(&cvs[2])), parent, &parents[1])
	var root [8][16]uint32
	compress16((*[16][16]uint32)(unsafe.Pointer(&parents[0])), parent|rootNode, &root)
	for k := range lanes {
		for w := range 8 {
			binary.LittleEndian.PutUint32(sums[k][4*w:], root[w][k])
		}
	}
}
