package blob

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Direct writes.
//
// The active segment is written through a second descriptor opened with
// O_DIRECT, so that chunk bytes go from doppel's memory to the disk
// without passing through the host's page cache. A buffered write costs
// the kernel a copy into fresh page-cache pages, their dirty accounting,
// their writeback and later their reclaim, several times the CPU of the
// direct write of the same bytes (docs/PERFORMANCE.md); and the page cache
// would hold the bytes a second time anyway, since the kernel keeps the
// file's own pages above doppel. Reads, punches and syncs keep using the
// buffered descriptor; the kernel drops cached pages of a range a direct
// write covers.
//
// O_DIRECT wants the memory, the offset and the length aligned. Offsets
// are (every chunk starts at an Align boundary, and a write covers whole
// reserved ranges, padding included); the chunks are copied into an
// aligned staging buffer with their padding zeroed, which costs a memory
// copy, far less than the page-cache path.
//
// A direct write waits for the disk, so it goes on in the background, as
// the page cache's writeback would: StartPutMany returns once the bytes
// are staged, with at most maxDirectWrites writes in flight
// (backpressure), and its Wait waits for them. The content layer hashes
// the next chunks meanwhile, and commits a chunk only after its Wait: a
// commit must never reach the disk, or survive the daemon, before the
// bytes it references. A read, free or hint over a range still being
// written waits for its write; Sync waits for every write in flight.
//
// Writes smaller than directMinBytes go through the page cache even into
// a segment with a direct handle: ranges never share a page, so the two
// kinds do not disturb each other.
//
// Where the host file system refuses O_DIRECT (EINVAL on open, as some
// do, or on the first write), segments are written through the buffered
// descriptor instead.

// directMinBytes is the least a write must hold to go direct. A small
// file's flush waits for its chunk's write before it commits; through the
// page cache that is a copy, directly it is a round trip to the disk
// (measured: creating 10,000 files of 1 KiB took 20-25 % longer with
// every write direct). Streams write 1 MiB at a time.
const directMinBytes = 256 << 10

// maxDirectWrites bounds the direct writes in flight, and with them the
// staging memory (maxDirectWrites * stageBytes).
const maxDirectWrites = 16

// stageBytes is the size of a pooled staging buffer: one write's batch.
const stageBytes = batchBytes

// stagePool recycles aligned staging buffers of stageBytes.
var stagePool = sync.Pool{New: func() any { b := alignedBuf(stageBytes); return &b }}

// AlignedBuf returns n zeroed bytes starting at an Align boundary, as
// O_DIRECT writes want them.
func AlignedBuf(n int) []byte { return alignedBuf(n) }

// alignedBuf returns n zeroed bytes starting at an Align boundary.
func alignedBuf(n int) []byte {
	b := make([]byte, n+Align)
	skip := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & (Align - 1))
	return b[skip : skip+n : skip+n]
}

// openDirect opens the segment file at path for direct writes, or returns
// nil if the host file system does not support them.
func openDirect(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|unix.O_DIRECT, 0)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
		return nil, nil
	}
	return f, err
}

// directWrite is a direct write in flight.
type directWrite struct {
	seg      uint32
	off, end int64
	done     chan struct{} // closed once written (or failed) and settled
	err      error         // set before done closes
}

// startDirect stages chunks data for the range [off, end) reserved in s
// and writes them in the background; the write ends the reservation.
func (d *Dir) startDirect(s *segment, data [][]byte, off, end int64) *directWrite {
	d.directSlots <- struct{}{}
	stage, pooled := stageChunks(data, end-off)
	w := &directWrite{seg: s.num, off: off, end: end, done: make(chan struct{})}
	d.mu.Lock()
	d.inflight = append(d.inflight, w)
	d.mu.Unlock()
	go func() {
		defer func() { <-d.directSlots }()
		var err error
		if len(stage) > 0 { // empty chunks only: nothing to write
			_, err = writevAt(s.direct, [][]byte{stage}, off)
		}
		if errors.Is(err, unix.EINVAL) {
			// The host took O_DIRECT on open but refuses the write (some
			// file systems do): write these bytes through the page cache,
			// and the next segments too.
			d.mu.Lock()
			d.direct = false
			d.mu.Unlock()
			_, err = writevAt(s.f, [][]byte{stage}, off)
		}
		if pooled != nil {
			stagePool.Put(pooled)
		}
		if err != nil {
			err = fmt.Errorf("blob: write segment %d: %w", s.num, err)
			punchHole(s.f, off, end-off) // best effort: leave no partial chunk behind
		}
		d.finish(s, err)
		d.mu.Lock()
		if i := slices.Index(d.inflight, w); i >= 0 {
			d.inflight = slices.Delete(d.inflight, i, i+1)
		}
		d.mu.Unlock()
		w.err = err
		close(w.done)
	}()
	return w
}

// stageChunks copies chunks data into an aligned buffer of size bytes,
// each at the next Align boundary with zeros up to it. pooled, if not
// nil, goes back to stagePool once the buffer is written.
func stageChunks(data [][]byte, size int64) (stage []byte, pooled *[]byte) {
	if size <= stageBytes {
		pooled = stagePool.Get().(*[]byte)
		stage = (*pooled)[:size]
	} else {
		stage = alignedBuf(int(size))
	}
	pos := 0
	for _, p := range data {
		n := copy(stage[pos:], p)
		end := int(roundUp(int64(pos + n)))
		clear(stage[pos+n : end])
		pos = end
	}
	return stage, pooled
}

// waitWrites waits for the direct writes in flight into segment num that
// overlap [off, end); num 0 waits for every write in flight.
func (d *Dir) waitWrites(num uint32, off, end int64) {
	d.mu.Lock()
	var waits []chan struct{}
	for _, w := range d.inflight {
		if num == 0 || (w.seg == num && w.off < end && off < w.end) {
			waits = append(waits, w.done)
		}
	}
	d.mu.Unlock()
	for _, c := range waits {
		<-c
	}
}

// drain waits for every direct write in flight.
func (d *Dir) drain() { d.waitWrites(0, 0, 0) }
