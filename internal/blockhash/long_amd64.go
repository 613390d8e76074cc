//go:build amd64 && !purego

package blockhash

import "encoding/binary"

// sumLong sets sums[k] to the hash of msgs[which[k]], each longer than
// one chunk. The full chunks of all the messages go through the chunk
// kernel sixteen at a time, whichever message they belong to; a short
// last chunk goes through compress alone. Then the tree: at each level,
// every message pairs its nodes from the left and carries an odd last one
// up, which builds BLAKE3's tree (the left subtree of each parent holds
// the largest power of two of chunks), and the parents of all messages
// go through the parent kernel sixteen at a time; a pair that is all its
// message has left is the root.
func sumLong(msgs [][]byte, which []int, sums [][32]byte) {
	total := 0
	for _, i := range which {
		total += (len(msgs[i]) + chunkSize - 1) / chunkSize
	}
	slab := make([][8]uint32, total)
	nodes := make([][][8]uint32, len(which)) // each message's nodes at the level being built
	var chunks chunkBatch
	for k, i := range which {
		m := msgs[i]
		n := (len(m) + chunkSize - 1) / chunkSize
		nodes[k], slab = slab[:n:n], slab[n:]
		full := len(m) / chunkSize
		for c := range full {
			chunks.add(&m[c*chunkSize], uint64(c), &nodes[k][c])
		}
		if full < n {
			nodes[k][full] = chunkCV(m[full*chunkSize:], uint64(full))
		}
	}
	chunks.flush()
	parents, roots := parentBatch{flags: parent}, parentBatch{flags: parent | rootNode}
	for {
		busy := false
		for _, ns := range nodes {
			if len(ns) < 2 {
				continue
			}
			busy = true
			b := &parents
			if len(ns) == 2 {
				b = &roots
			}
			// Pair p reads nodes 2p and 2p+1 and writes node p: no pair
			// overwrites a node a later pair reads.
			for p := range len(ns) / 2 {
				b.add(&ns[2*p], &ns[2*p+1], &ns[p])
			}
		}
		if !busy {
			break
		}
		parents.flush()
		roots.flush()
		for k, ns := range nodes {
			if len(ns) < 2 {
				continue
			}
			if len(ns)%2 == 1 {
				ns[len(ns)/2] = ns[len(ns)-1]
			}
			nodes[k] = ns[:(len(ns)+1)/2]
		}
	}
	for k, ns := range nodes {
		for w, v := range ns[0] {
			binary.LittleEndian.PutUint32(sums[k][4*w:], v)
		}
	}
}

// chunkBatch gathers full chunks for the chunk kernel.
type chunkBatch struct {
	n        int
	ptrs     [Lanes]*byte
	counters [2][Lanes]uint32
	dests    [Lanes]*[8]uint32
	out      [8][Lanes]uint32
}

func (b *chunkBatch) add(chunk *byte, counter uint64, dest *[8]uint32) {
	b.ptrs[b.n], b.dests[b.n] = chunk, dest
	b.counters[0][b.n], b.counters[1][b.n] = uint32(counter), uint32(counter>>32)
	if b.n++; b.n == Lanes {
		b.flush()
	}
}

func (b *chunkBatch) flush() {
	if b.n == 0 {
		return
	}
	for k := b.n; k < Lanes; k++ { // unused lanes repeat the first
		b.ptrs[k] = b.ptrs[0]
	}
	// Prefetching the lanes' next chunks of a long message, sixteen
	// chunks on, took BenchmarkSumLong from 3.0 to 4.7 GB/s on data
	// the caches do not hold: sixteen short streams at once are more
	// than the hardware prefetcher follows.
	hashChunks16(&b.ptrs, blocksPerChunk, &b.counters, &b.out, 0, chunkStart, chunkEnd, Lanes*chunkSize)
	for k, d := range b.dests[:b.n] {
		for w := range d {
			d[w] = b.out[w][k]
		}
	}
	b.n = 0
}

// parentBatch gathers pairs of chaining values for the parent kernel.
type parentBatch struct {
	flags uint32
	n     int
	msg   [16][Lanes]uint32
	dests [Lanes]*[8]uint32
	out   [8][Lanes]uint32
}

// add copies the pair in at once, so dest may be one of them.
func (b *parentBatch) add(left, right, dest *[8]uint32) {
	for w := range 8 {
		b.msg[w][b.n], b.msg[8+w][b.n] = left[w], right[w]
	}
	b.dests[b.n] = dest
	if b.n++; b.n == Lanes {
		b.flush()
	}
}

func (b *parentBatch) flush() {
	if b.n == 0 {
		return
	}
	compress16(&b.msg, b.flags, &b.out)
	for k, d := range b.dests[:b.n] {
		for w := range d {
			d[w] = b.out[w][k]
		}
	}
	b.n = 0
}
