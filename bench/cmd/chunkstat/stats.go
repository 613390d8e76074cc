package main

import (
	"github.com/doppelfs/doppel/internal/chunker"
	"github.com/doppelfs/doppel/internal/schema"
)

// blockSize is the alignment of chunks in doppel's segment files.
const blockSize = 4096

// bucketBounds are the upper bounds (exclusive) of the chunk size
// histogram; the last bucket is open.
var bucketBounds = []int64{4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20}

// policyStats cuts the data of one policy and counts its chunks. For
// "whole-file" (no chunker) the scanner adds whole files instead.
type policyStats struct {
	name    string
	ch      chunker.Chunker
	off     int64  // file offset of pending[0]
	pending []byte // data whose chunk boundary is not decided yet

	chunks    int64 // non-zero chunks, duplicates included
	bytes     int64 // their bytes
	zeroBytes int64 // bytes of all-zero chunks (holes in a volume)
	distinct  map[schema.Hash]int64
}

func newPolicyStats(name string, ch chunker.Chunker) *policyStats {
	return &policyStats{name: name, ch: ch, distinct: map[schema.Hash]int64{}}
}

// begin starts a data range at file offset off.
func (ps *policyStats) begin(off int64) {
	ps.off = off
	ps.pending = ps.pending[:0]
}

// feed appends the next bytes of the range and cuts every chunk whose
// boundary is decided; final marks the end of the range.
func (ps *policyStats) feed(p []byte, final bool) {
	ps.pending = append(ps.pending, p...)
	done := 0
	for done < len(ps.pending) {
		n := ps.ch.Cut(ps.off+int64(done), ps.pending[done:], final)
		if n == 0 {
			break
		}
		ps.chunk(ps.pending[done : done+n])
		done += n
	}
	ps.off += int64(done)
	ps.pending = append(ps.pending[:0], ps.pending[done:]...)
}

func (ps *policyStats) chunk(p []byte) {
	if isZero(p) {
		ps.zeroBytes += int64(len(p))
		return
	}
	ps.add(schema.Sum(p), int64(len(p)))
}

func (ps *policyStats) add(h schema.Hash, n int64) {
	ps.chunks++
	ps.bytes += n
	ps.distinct[h] = n
}

func isZero(p []byte) bool {
	for _, b := range p {
		if b != 0 {
			return false
		}
	}
	return true
}

// Bucket is one bar of the distinct-chunk size histogram.
type Bucket struct {
	Below  int64 `json:"below"` // upper bound, exclusive; 0 for the open last bucket
	Chunks int64 `json:"chunks"`
	Bytes  int64 `json:"bytes"`
	Padded int64 `json:"padded_bytes"` // rounded up to 4 KiB per chunk
}

// PolicyReport is what one policy (or whole-file dedup) keeps.
type PolicyReport struct {
	Policy         string   `json:"policy"`
	Chunks         int64    `json:"chunks"`
	Bytes          int64    `json:"bytes"`
	ZeroBytes      int64    `json:"zero_bytes"`
	DistinctChunks int64    `json:"distinct_chunks"`
	DistinctBytes  int64    `json:"distinct_bytes"`
	PaddedBytes    int64    `json:"padded_bytes"` // distinct bytes, 4 KiB-aligned per chunk
	MeanChunk      float64  `json:"mean_distinct_chunk"`
	Buckets        []Bucket `json:"buckets"`
}

func (ps *policyStats) report() PolicyReport {
	r := PolicyReport{Policy: ps.name, Chunks: ps.chunks, Bytes: ps.bytes, ZeroBytes: ps.zeroBytes}
	r.Buckets = make([]Bucket, len(bucketBounds)+1)
	for i, b := range bucketBounds {
		r.Buckets[i].Below = b
	}
	for _, n := range ps.distinct {
		padded := (n + blockSize - 1) / blockSize * blockSize
		r.DistinctChunks++
		r.DistinctBytes += n
		r.PaddedBytes += padded
		i := 0
		for i < len(bucketBounds) && n >= bucketBounds[i] {
			i++
		}
		b := &r.Buckets[i]
		b.Chunks++
		b.Bytes += n
		b.Padded += padded
	}
	if r.DistinctChunks > 0 {
		r.MeanChunk = float64(r.DistinctBytes) / float64(r.DistinctChunks)
	}
	return r
}
