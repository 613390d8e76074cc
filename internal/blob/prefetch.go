package blob

import (
	"cmp"
	"slices"

	"golang.org/x/sys/unix"
)

// prefetchGap is the largest gap between two locations that one prefetch
// spans: reading a little unneeded data costs less than another request.
const prefetchGap = 64 << 10

// Prefetch implements Store with posix_fadvise(WILLNEED) over the
// locations, sorted and coalesced.
func (d *Dir) Prefetch(locs []Loc) { d.adviseAll(locs, unix.FADV_WILLNEED) }

// Forget implements Store with posix_fadvise(DONTNEED) over the
// locations, sorted and coalesced.
func (d *Dir) Forget(locs []Loc) { d.adviseAll(locs, unix.FADV_DONTNEED) }

func (d *Dir) adviseAll(locs []Loc, advice int) {
	locs = slices.Clone(locs)
	slices.SortFunc(locs, func(a, b Loc) int {
		return cmp.Or(cmp.Compare(a.Segment, b.Segment), cmp.Compare(a.Offset, b.Offset))
	})
	for i := 0; i < len(locs); {
		seg, start := locs[i].Segment, locs[i].Offset
		end := start + uint64(locs[i].Length)
		for i++; i < len(locs) && locs[i].Segment == seg && locs[i].Offset <= end+prefetchGap; i++ {
			end = max(end, locs[i].Offset+uint64(locs[i].Length))
		}
		d.advise(seg, int64(start), int64(end-start), advice)
	}
}

func (d *Dir) advise(num uint32, off, n int64, advice int) {
	if checkLoc(Loc{Segment: num, Offset: uint64(off) &^ (Align - 1)}) != nil {
		return
	}
	d.waitWrites(num, off, off+n)
	s, err := d.use(num)
	if err != nil {
		return
	}
	withFd(s.f, func(fd int) error { return unix.Fadvise(fd, off, n, advice) })
	d.mu.Lock()
	d.release(s)
	d.mu.Unlock()
}

// InMemory implements ResidencyProber: a one-byte preadv2 with
// RWF_NOWAIT, which fails with EAGAIN instead of waiting for the disk
// (Linux starts reading the page then, as for any read that misses).
// Bytes not yet written to the segment file count as not in memory.
func (d *Dir) InMemory(loc Loc) bool {
	if checkLoc(Loc{Segment: loc.Segment, Offset: loc.Offset &^ (Align - 1)}) != nil {
		return false
	}
	s, err := d.use(loc.Segment)
	if err != nil {
		return false
	}
	defer func() {
		d.mu.Lock()
		d.release(s)
		d.mu.Unlock()
	}()
	var b [1]byte
	n := 0
	err = withFd(s.f, func(fd int) error {
		var err error
		n, err = unix.Preadv2(fd, [][]byte{b[:]}, int64(loc.Offset), unix.RWF_NOWAIT)
		return err
	})
	return err == nil && n == 1
}
