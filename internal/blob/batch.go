package blob

import (
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
// locations in order. Chunks that fit the active segment together are
// written with one pwritev (their padding written as zeros), so a batch
// costs a syscall per few hundred chunks rather than one per chunk, and
// concurrent writers do not contend on the segment file's lock as often.
// On error, nothing the call wrote is kept.
func (d *Dir) PutMany(data [][]byte) ([]Loc, error) {
	locs := make([]Loc, 0, len(data))
	for len(data) > 0 {
		batch := data[:batchLen(data)]
		for _, p := range batch {
			if uint64(len(p)) > math.MaxUint32 {
				d.freeAll(locs)
				return nil, fmt.Errorf("blob: chunk of %d bytes is too large", len(p))
			}
		}
		s, off, n, err := d.reserve(batch)
		if err != nil {
			d.freeAll(locs)
			return nil, err
		}
		iovs := make([][]byte, 0, 2*n)
		pos := off
		for i, p := range data[:n] {
			iovs = append(iovs, p)
			locs = append(locs, Loc{Segment: s.num, Offset: uint64(pos), Length: uint32(len(p))})
			pos += roundUp(int64(len(p)))
			if pad := roundUp(int64(len(p))) - int64(len(p)); pad > 0 && i < n-1 {
				iovs = append(iovs, zeroPad[:pad])
			}
		}
		_, err = writevAt(s.f, iovs, off)
		if err != nil {
			err = fmt.Errorf("blob: write segment %d: %w", s.num, err)
			punchHole(s.f, off, pos-off) // best effort: leave no partial chunk behind
		} else {
			d.writeBehind(s, pos)
		}
		d.finish(s, err)
		if err != nil {
			d.freeAll(locs[:len(locs)-n])
			return nil, err
		}
		data = data[n:]
	}
	return locs, nil
}

// freeAll punches out chunks a failed PutMany had written (best effort).
func (d *Dir) freeAll(locs []Loc) {
	for _, l := range locs {
		d.Free(l)
	}
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
