package blob

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// ManyFreer is implemented by stores that free many locations at once for
// less than freeing them one by one.
type ManyFreer interface {
	// FreeMany is Free of every location. It returns the stored bytes
	// (Length) of those freed and the errors of the others.
	FreeMany(locs []Loc) (freed int64, err error)
}

var _ ManyFreer = (*Dir)(nil)

// FreeMany implements ManyFreer: locations that lie side by side in a
// segment (each starting where the previous one's Align-rounded range
// ends) are punched as one range. The chunks of data written in one go are
// stored side by side, and a punch costs a system call that holds the
// segment file's inode lock against the direct writes of new chunks: when
// ext4 on a loop device over a volume file discarded a deleted tree,
// 30,888 punches of 4 KiB chunks one by one took 9.6 s, and the space came
// back that much later.
func (d *Dir) FreeMany(locs []Loc) (int64, error) {
	sorted := make([]Loc, 0, len(locs))
	d.mu.Lock()
	for _, l := range locs {
		if !d.unclaimed(l) {
			sorted = append(sorted, l)
		}
	}
	d.mu.Unlock()
	slices.SortFunc(sorted, func(a, b Loc) int {
		if a.Segment != b.Segment {
			return cmp.Compare(a.Segment, b.Segment)
		}
		return cmp.Compare(a.Offset, b.Offset)
	})
	var freed int64
	var errs []error
	for i := 0; i < len(sorted); {
		if err := checkLoc(sorted[i]); err != nil {
			errs = append(errs, err)
			i++
			continue
		}
		seg, off := sorted[i].Segment, int64(sorted[i].Offset)
		end, bytes := off, int64(0)
		j := i
		for ; j < len(sorted) && sorted[j].Segment == seg && int64(sorted[j].Offset) <= end && checkLoc(sorted[j]) == nil; j++ {
			end = max(end, int64(sorted[j].Offset)+roundUp(int64(sorted[j].Length)))
			bytes += int64(sorted[j].Length)
		}
		if err := d.freeRange(seg, off, end); err != nil {
			errs = append(errs, err)
		} else {
			freed += bytes
		}
		i = j
	}
	return freed, errors.Join(errs...)
}

// freeRange punches [off, end) of segment seg, which no chunk still uses,
// and deletes the segment if it is sealed and now holds no data.
func (d *Dir) freeRange(seg uint32, off, end int64) error {
	d.waitWrites(seg, off, end)
	s, err := d.use(seg)
	if err != nil {
		return err
	}
	err = punchHole(s.f, off, end-off)
	if err != nil {
		err = fmt.Errorf("blob: free: %w", err)
	}
	d.mu.Lock()
	if err == nil && !d.closed {
		err = d.maybeRemove(s)
	}
	d.release(s)
	d.mu.Unlock()
	return err
}
