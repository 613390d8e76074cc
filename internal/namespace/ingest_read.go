package namespace

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/doppelfs/doppel/internal/content"
)

// ingestWindow is how much new data CreateFile reads and cuts at a time.
const ingestWindow = 8 << 20

// tailRoom is the room a window buffer keeps for the tail carried over
// from the previous window: less than a chunk of the default policy.
const tailRoom = 256 << 10

var windowBufs = sync.Pool{New: func() any { return make([]byte, tailRoom+ingestWindow) }}

// window is a part of a file CreateFile read, cut into chunks that
// reference its buffer.
type window struct {
	buf     []byte
	chunks  []*content.Prepared
	end     int64  // offset just past the last chunk
	tail    []byte // data at tailOff whose chunk boundary is not known yet
	tailOff int64
	last    bool // the file's data ends here
}

// run is a contiguous piece of data in a window's buffer.
type run struct {
	off        int64
	start, end int
}

// next reads the data that follows tail (at tailOff) into a new window,
// up to ingestWindow new bytes, and cuts it. Pieces separated by holes are
// cut separately, as a writer skipping the holes would have them cut.
func (in *ingest) next(tail []byte, tailOff int64) (*window, error) {
	w := &window{buf: in.buffer(len(tail))}
	n := copy(w.buf, tail)
	limit := min(len(w.buf), n+ingestWindow)
	var runs []run
	cur := run{off: tailOff, end: n}
	eof := false
	for n < limit {
		off, k, err := in.nf.ReadNext(w.buf[n:limit])
		if errors.Is(err, io.EOF) {
			eof = true
			break
		}
		if err == nil && (k <= 0 || k > limit-n) {
			err = fmt.Errorf("createfile: ReadNext returned %d bytes", k)
		}
		if err == nil && cur.end > cur.start && off < cur.off+int64(cur.end-cur.start) {
			err = fmt.Errorf("createfile: ReadNext went back to offset %d", off)
		}
		if err != nil {
			in.release(w)
			return nil, err
		}
		if cur.end > cur.start && off != cur.off+int64(cur.end-cur.start) { // a hole
			runs = append(runs, cur)
			cur = run{start: n, end: n}
		}
		if cur.end == cur.start {
			cur.off = off
		}
		n += k
		cur.end = n
	}
	if cur.end > cur.start {
		runs = append(runs, cur)
	}
	for i, r := range runs {
		final := eof || i < len(runs)-1
		data := w.buf[r.start:r.end]
		chunks, used := content.Cut(in.ch, r.off, data, final)
		w.chunks = append(w.chunks, chunks...)
		if len(chunks) > 0 {
			w.end = r.off + int64(used)
		}
		if !final {
			w.tail, w.tailOff = data[used:], r.off+int64(used)
		}
	}
	w.last = eof
	return w, nil
}

// buffer returns a window buffer with room for a tail of n bytes.
func (in *ingest) buffer(n int) []byte {
	switch {
	case n > tailRoom: // a chunking policy with very large chunks
		return make([]byte, n+ingestWindow)
	case n == 0 && in.nf.Size < smallFile:
		// The first window of a small file: one byte more than it holds,
		// so that the read which finds its end fits too.
		return make([]byte, in.nf.Size+1)
	}
	return windowBufs.Get().([]byte)
}

// smallFile is the size below which a file's window is allocated to fit
// rather than taken from the pool.
const smallFile = 1 << 20

// release gives back w's buffer once its chunks are committed.
func (in *ingest) release(w *window) {
	if len(w.buf) == tailRoom+ingestWindow {
		windowBufs.Put(w.buf)
	}
	w.buf, w.chunks = nil, nil
}
