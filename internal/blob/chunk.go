package blob

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// Put appends data to the active segment and returns its location: it is
// PutMany of one chunk.
func (d *Dir) Put(data []byte) (Loc, error) {
	locs, err := d.PutMany([][]byte{data})
	if err != nil {
		return Loc{}, err
	}
	return locs[0], nil
}

// reserve reserves room in the active segment for the first chunks of
// data, each at an Align boundary, as many as fit (at least one, starting
// a new segment if needed). It returns the segment, holding a reference
// and a pending Put that finish releases, the offset of the first chunk
// and the number of chunks reserved.
func (d *Dir) reserve(data [][]byte) (*segment, int64, int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, 0, 0, fmt.Errorf("blob: put: %w", os.ErrClosed)
	}
	size := roundUp(int64(len(data[0])))
	if a := d.active; a == nil || (a.end > 0 && a.end+size > d.segSize) {
		if err := d.rotate(); err != nil {
			return nil, 0, 0, err
		}
	}
	s := d.active
	off := s.end
	n := 0
	for n < len(data) {
		size := roundUp(int64(len(data[n])))
		if n > 0 && s.end+size > d.segSize {
			break
		}
		s.end += size
		n++
	}
	s.pending++
	s.refs++
	return s, off, n, nil
}

// finish ends a write into s that reserve started; err is its outcome.
func (d *Dir) finish(s *segment, err error) { d.finishIn(s, err, false) }

// finishIn is finish marking s in the set the next Sync takes: overwritten
// for a write in place, dirty otherwise. The set is picked under d.mu, as
// Sync swaps them: a write that ended in a set Sync had already taken
// would be left out of the next one.
func (d *Dir) finishIn(s *segment, err error, inPlace bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s.pending--
	d.endDirect(s)
	if err == nil && !d.closed {
		marks := d.dirty
		if inPlace {
			if d.overwritten == nil {
				d.overwritten = make(map[uint32]*segment)
			}
			marks = d.overwritten
		}
		if marks[s.num] == nil {
			s.refs++
			marks[s.num] = s
		}
	}
	// If s was sealed meanwhile it may have become empty; an error here
	// concerns no data of this write and is left for a later check.
	d.maybeRemove(s)
	d.release(s)
}

// rotate seals the active segment, if any, and starts a new one. The new
// number is made durable in the "next" file before the segment exists.
// d.mu must be held.
func (d *Dir) rotate() error {
	if d.next == math.MaxUint32 {
		return errors.New("blob: segment numbers exhausted")
	}
	num := d.next + 1
	if err := d.writeNext(num); err != nil {
		return err
	}
	d.next = num
	f, err := os.OpenFile(d.segPath(num), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("blob: create segment: %w", err)
	}
	var direct *os.File
	if d.direct {
		if direct, err = openDirect(d.segPath(num)); err != nil {
			f.Close()
			return fmt.Errorf("blob: open segment for direct writes: %w", err)
		}
		d.direct = direct != nil // not supported here: stop trying
	}
	s := &segment{num: num, f: f, direct: direct, refs: 1} // the reference of the active role
	d.segs[num] = s
	d.dirDirty = true
	old := d.active
	d.active = s
	if old != nil {
		d.endDirect(old)
		d.cache(old)
		d.maybeRemove(old) // everything in it may have been freed already
		d.release(old)     // drop the reference of the active role
	}
	return nil
}

// checkLoc rejects locations no Put can have returned.
func checkLoc(loc Loc) error {
	if loc.Segment == 0 || loc.Offset%Align != 0 || loc.Offset > math.MaxInt64-uint64(Align)-uint64(loc.Length) {
		return fmt.Errorf("blob: invalid location %+v: %w", loc, ErrCorrupt)
	}
	return nil
}

// Read reads the bytes stored at loc into buf and returns buf[:loc.Length].
// If buf is too short a new buffer is allocated. A segment too short for
// loc gives an error wrapping ErrCorrupt; a missing one, os.ErrNotExist.
func (d *Dir) Read(loc Loc, buf []byte) ([]byte, error) {
	if err := checkLoc(loc); err != nil {
		return nil, err
	}
	d.waitWrites(loc.Segment, int64(loc.Offset), int64(loc.Offset)+int64(loc.Length))
	s, err := d.use(loc.Segment)
	if err != nil {
		return nil, err
	}
	if len(buf) < int(loc.Length) {
		buf = make([]byte, loc.Length)
	}
	buf = buf[:loc.Length]
	n, err := s.f.ReadAt(buf, int64(loc.Offset))
	d.mu.Lock()
	d.release(s)
	d.mu.Unlock()
	switch {
	case err == io.EOF:
		return nil, fmt.Errorf("blob: segment %d: %d of %d bytes at offset %d: %w",
			loc.Segment, n, loc.Length, loc.Offset, ErrCorrupt)
	case err != nil:
		return nil, fmt.Errorf("blob: read segment %d: %w", loc.Segment, err)
	}
	return buf, nil
}

// Free punches out the Align-rounded range of loc and deletes its segment
// if that is sealed and now holds no data. Where the host file system
// cannot punch holes the error wraps errors.ErrUnsupported. A pooled slot
// that a put wrote into and nobody claimed goes back to the pool instead
// (slots.go): its free record still stands.
func (d *Dir) Free(loc Loc) error {
	if err := checkLoc(loc); err != nil {
		return err
	}
	d.mu.Lock()
	pooled := d.unclaimed(loc)
	d.mu.Unlock()
	if pooled {
		return nil
	}
	return d.freeRange(loc.Segment, int64(loc.Offset), int64(loc.Offset)+roundUp(int64(loc.Length)))
}

// use acquires segment num for a call; the caller releases it.
func (d *Dir) use(num uint32) (*segment, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("blob: %w", os.ErrClosed)
	}
	return d.acquire(num)
}
