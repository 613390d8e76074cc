package blockhash

import "github.com/zeebo/blake3"

// Size is the length of the blocks Sum hashes several at a time.
const Size = 4096

// Lanes is how many blocks Sum hashes at a time: callers that hand it
// runs of blocks cut them to this length.
const Lanes = 16

// minLanes is the fewest blocks worth a sixteen-lane pass: it costs
// about what four blocks hashed one by one do (BenchmarkSum).
const minLanes = 5

// Sum sets out[i] to the BLAKE3-256 of msgs[i], for i < len(msgs);
// out must be at least as long. Where the CPU allows it, blocks of Size
// bytes go sixteen at a time, and the 1 KiB chunks of longer or shorter
// messages sixteen at a time too, whichever message they come from;
// messages of one chunk or less, and longer ones with too few full
// chunks among them to be worth a pass (minLanes), one by one.
func Sum[H ~[32]byte](msgs [][]byte, out []H) {
	_ = out[:len(msgs)]
	var long []int // indexes in msgs of messages longer than a chunk
	fullChunks := 0
	var lanes [Lanes]int // indexes in msgs of a group's blocks
	n := 0
	flush := func() {
		if n >= minLanes || (haveEight && !haveSixteen && n >= minLanesEight) {
			var sums [Lanes][32]byte
			sumBlocks(msgs, lanes[:n], &sums)
			for k, i := range lanes[:n] {
				out[i] = H(sums[k])
			}
		} else {
			for _, i := range lanes[:n] {
				out[i] = H(blake3.Sum256(msgs[i]))
			}
		}
		n = 0
	}
	for i, m := range msgs {
		if len(m) > chunkSize && len(m) != Size && haveSixteen {
			long = append(long, i)
			fullChunks += len(m) / chunkSize
			continue
		}
		if len(m) != Size || !(haveSixteen || haveEight) {
			out[i] = H(blake3.Sum256(m))
			continue
		}
		lanes[n] = i
		if n++; n == len(lanes) {
			flush()
		}
	}
	flush()
	if fullChunks < minLanes {
		for _, i := range long {
			out[i] = H(blake3.Sum256(msgs[i]))
		}
		return
	}
	sums := make([][32]byte, len(long))
	sumLong(msgs, long, sums)
	for k, i := range long {
		out[i] = H(sums[k])
	}
}
