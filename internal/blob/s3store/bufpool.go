package s3store

import (
	"math"
	"slices"
	"sync"

	"github.com/doppelfs/doppel/internal/blob"
)

// Prefetch buffers are recycled: a sequential read of a shared volume
// GETs a few MiB per range, and a fresh aligned buffer each time cost a
// quarter of a cold read's CPU in zeroing, page faults and collections
// (BENCHMARKS.md, issue 14).
//
// Buffers come in size classes a quarter power of two apart, each with
// room for a record's header and block sums (classSlack) on top, so that
// a whole pack's range (4 MiB by default, up to a quarter more with the
// slack of PutMany) fits a class no more than about a fifth larger.
// Smaller and larger requests are allocated as before.
const (
	minPooled  = 64 << 10
	classSlack = 64 << 10
	numClasses = 41 // up to minPooled << 10 = 64 MiB
)

// classSizes are the buffer sizes of the classes, ascending.
var classSizes = func() (s [numClasses]int) {
	for i := range s {
		n := int(math.Ceil(minPooled * math.Pow(2, float64(i)/4)))
		s[i] = int(roundUp(int64(n))) + classSlack
	}
	return s
}()

// fetchBufs is the process's pool of prefetch buffers. sync.Pool lets the
// collector take idle ones back.
var fetchBufs [numClasses]sync.Pool

// classOf is the smallest class holding n bytes, numClasses if none does.
func classOf(n int) int {
	i, _ := slices.BinarySearch(classSizes[:], n)
	return i
}

// pooledRecordBuf is recordBuf(n) from the pool where a class fits. Its
// bytes are not zeroed: the GET fills data, the cache writer the rest.
func pooledRecordBuf(n int) *recBuf {
	size := int(cacheRecordSize(uint32(n)))
	i := classOf(size)
	if size < minPooled || i == numClasses {
		return recordBuf(n)
	}
	var w []byte
	if p, _ := fetchBufs[i].Get().(*[]byte); p != nil {
		w = (*p)[:size]
		clear(w[:headerSize])
	} else {
		w = blob.AlignedBuf(classSizes[i])[:size]
	}
	return &recBuf{whole: w, data: w[headerSize : headerSize+n]}
}

// recycle returns rb's buffer to the pool if it came from there. Nothing
// may use rb afterwards.
func (rb *recBuf) recycle() {
	w := rb.whole[:cap(rb.whole)]
	if i := classOf(len(w)); i < numClasses && classSizes[i] == len(w) {
		fetchBufs[i].Put(&w)
	}
	rb.whole, rb.data = nil, nil
}
