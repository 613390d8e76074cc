package blob

import (
	"errors"
	"fmt"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// maxBatch bounds the chunks of one pwritev: with the padding between
// them, two iovecs each stay within IOV_MAX (1024).
const maxBatch = 500

// batchBytes is about the most one pwritev writes. Much larger writes
// cost the kernel more CPU per byte than 1 MiB ones (measured: 8 MiB
// pwritevs took 1.6 times the CPU of 1 MiB ones for the same bytes).
const batchBytes = 1 << 20

// batchLen is the number of leading chunks of data that make one write.
func batchLen(data [][]byte) int {
	n, bytes := 0, 0
	for n < len(data) && n < maxBatch && (n == 0 || bytes+len(data[n]) <= batchBytes) {
		bytes += len(data[n])
		n++
	}
	return n
}

// writevAt writes the iovecs at off; tests replace it to inject failures.
var writevAt = func(f *os.File, iovs [][]byte, off int64) (int, error) {
	total := 0
	err := withFd(f, func(fd int) error {
		for len(iovs) > 0 {
			if len(iovs[0]) == 0 { // an empty chunk
				iovs = iovs[1:]
				continue
			}
			n, err := unix.Pwritev(fd, iovs, off)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("pwritev wrote nothing")
			}
			total += n
			off += int64(n)
			for n > 0 { // drop what was written
				k := min(n, len(iovs[0]))
				iovs[0] = iovs[0][k:]
				n -= k
				if len(iovs[0]) == 0 {
					iovs = iovs[1:]
				}
			}
		}
		return nil
	})
	return total, err
}

// zeroPad supplies the padding between chunks of one pwritev.
var zeroPad [Align]byte

// PutMany appends the chunks of data as Put does each and returns their
// locations in order: StartPutMany, then Wait. On error, nothing the call
// wrote is kept.
func (d *Dir) PutMany(data [][]byte) ([]Loc, error) {
	w, err := d.StartPutMany(data)
	if err != nil {
		return nil, err
	}
	if err := w.Wait(); err != nil {
		return nil, err
	}
	return w.Locs, nil
}

// StartPutMany implements Store. Chunks that fit the active segment
// together are written with one write (their padding written as zeros),
// so a batch costs a syscall per few hundred chunks rather than one per
// chunk, and concurrent writers do not contend on the segment file's lock
// as often. Buffered writes are done when it returns; direct ones go on
// in the background (see direct.go).
func (d *Dir) StartPutMany(data [][]byte) (*Writing, error) {
	return d.startPutMany(data, true)
}

// StartPutManyCached implements CachedPutter: StartPutMany through the
// page cache only.
func (d *Dir) StartPutManyCached(data [][]byte) (*Writing, error) {
	return d.startPutMany(data, false)
}

// startPutMany is StartPutMany; large writes go direct only if direct.
// One-block chunks go into pooled slots while there are any (slots.go),
// the others are appended.
func (d *Dir) startPutMany(data [][]byte, direct bool) (*Writing, error) {
	slotted, err := d.putInSlots(data)
	if err != nil {
		return nil, err
	}
	if slotted == nil {
		return d.appendMany(data, direct)
	}
	var rest [][]byte
	for i, l := range slotted {
		if l == (Loc{}) {
			rest = append(rest, data[i])
		}
	}
	w, err := d.appendMany(rest, direct)
	if err != nil {
		(&Writing{d: d, Locs: slotted}).abandon()
		return nil, err
	}
	j := 0
	for i := range slotted {
		if slotted[i] == (Loc{}) {
			slotted[i] = w.Locs[j]
			j++
		}
	}
	w.Locs = slotted
	return w, nil
}

// appendMany appends the chunks of data to the active segment.
func (d *Dir) appendMany(data [][]byte, direct bool) (*Writing, error) {
	w := &Writing{d: d, Locs: make([]Loc, 0, len(data))}
	for len(data) > 0 {
		batch := data[:batchLen(data)]
		for _, p := range batch {
			if uint64(len(p)) > math.MaxUint32 {
				w.abandon()
				return nil, fmt.Errorf("blob: chunk of %d bytes is too large", len(p))
			}
		}
		s, off, n, err := d.reserve(batch)
		if err != nil {
			w.abandon()
			return nil, err
		}
		var end int64
		w.Locs, end = appendLocs(w.Locs, s.num, off, data[:n])
		if direct && s.direct != nil && end-off >= directMinBytes {
			w.flights = append(w.flights, d.startDirect(s, data[:n], off, end))
		} else if err := d.writeBuffered(s, data[:n], off, end); err != nil {
			w.Locs = w.Locs[:len(w.Locs)-n] // punched out already
			w.abandon()
			return nil, err
		}
		data = data[n:]
	}
	return w, nil
}

// Writing is a StartPutMany whose writes may still be in flight.
type Writing struct {
	Locs    []Loc // where the chunks go, in order
	d       *Dir
	flights []*directWrite
}

// Wait waits until the chunks' bytes are in the segment files, so that
// their locations may be read and referenced. On error nothing the
// StartPutMany wrote is kept.
func (w *Writing) Wait() error {
	var errs []error
	for _, f := range w.flights {
		<-f.done
		if f.err != nil {
			errs = append(errs, f.err)
		}
	}
	w.flights = nil
	if len(errs) > 0 {
		w.abandon()
		return errors.Join(errs...)
	}
	return nil
}

// abandon frees what the writes of w stored (best effort: Free waits for
// writes still in flight, and a failed write's range is a hole already).
func (w *Writing) abandon() {
	for _, l := range w.Locs {
		w.d.Free(l)
	}
}

// writeBuffered writes chunks data into the range [off, end) reserved in
// s with one pwritev whose padding between chunks is zeros (the padding
// after the last chunk is not written, so it takes no space beyond the
// chunk's last block), and ends the reservation.
func (d *Dir) writeBuffered(s *segment, data [][]byte, off, end int64) error {
	_, err := writevAt(s.f, paddedIovecs(data), off)
	if err != nil {
		err = fmt.Errorf("blob: write segment %d: %w", s.num, err)
		punchHole(s.f, off, end-off) // best effort: leave no partial chunk behind
	} else {
		d.writeBehind(s, end)
	}
	d.finish(s, err)
	return err
}

// paddedIovecs is chunks side by side as one write: each starts at an Align
// boundary, with zeros between them (none after the last).
func paddedIovecs(chunks [][]byte) [][]byte {
	iovs := make([][]byte, 0, 2*len(chunks))
	for i, p := range chunks {
		iovs = append(iovs, p)
		if pad := roundUp(int64(len(p))) - int64(len(p)); pad > 0 && i < len(chunks)-1 {
			iovs = append(iovs, zeroPad[:pad])
		}
	}
	return iovs
}

// appendLocs appends the locations of chunks data written from off in
// segment num, each at the next Align boundary, and returns them with the
// end of the range they take.
func appendLocs(locs []Loc, num uint32, off int64, data [][]byte) ([]Loc, int64) {
	pos := off
	for _, p := range data {
		locs = append(locs, Loc{Segment: num, Offset: uint64(pos), Length: uint32(len(p))})
		pos += roundUp(int64(len(p)))
	}
	return locs, pos
}

// writeBehindBytes is how much written data of a segment may wait before
// its writeback is started.
const writeBehindBytes = 8 << 20

// writeBehind starts the writeback of s's data below end once enough has
// accumulated (sync_file_range WRITE: it does not wait). A streaming
// writer's data then goes to disk while it writes, instead of all at its
// fsync. Durability is unchanged: Sync still syncs. The caller holds a
// reference to s.
func (d *Dir) writeBehind(s *segment, end int64) {
	d.mu.Lock()
	from := s.kicked
	kick := end-from >= writeBehindBytes
	if kick {
		s.kicked = end
	}
	d.mu.Unlock()
	if kick {
		withFd(s.f, func(fd int) error {
			return unix.SyncFileRange(fd, from, end-from, unix.SYNC_FILE_RANGE_WRITE)
		})
	}
}
