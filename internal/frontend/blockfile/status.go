package blockfile

import (
	"errors"
	"syscall"

	"github.com/doppelfs/doppel/internal/frontend/nbd"
	"github.com/doppelfs/doppel/internal/vfs"
)

// Lseek's whence values for data and holes.
const (
	seekData = 3
	seekHole = 4
)

// maxStatusExtents bounds the extents one BLOCK_STATUS answer looks up;
// the client asks again for the rest.
const maxStatusExtents = 256

// BlockStatus implements nbd.BlockStatuser from the file's extent map
// (SEEK_DATA and SEEK_HOLE): holes are reported as hole and zero, data as
// allocated. Past the file's end (if it was shortened since the client
// connected) everything is a hole.
func (f *File) BlockStatus(off, length int64) ([]nbd.Extent, error) {
	end := off + length
	var out []nbd.Extent
	for pos := off; pos < end && len(out) < maxStatusExtents; {
		data, err := f.fs.Lseek(f.h, pos, seekData)
		if errors.Is(err, syscall.ENXIO) {
			data = end
		} else if err != nil {
			return nil, err
		}
		if data > pos {
			n := min(data, end) - pos
			out = append(out, nbd.Extent{Length: n, Flags: nbd.ExtentHole | nbd.ExtentZero})
			pos += n
			continue
		}
		hole, err := f.seekHole(pos, end)
		if err != nil {
			return nil, err
		}
		if hole <= pos { // cannot happen on a consistent map; never loop
			hole = end
		}
		n := min(hole, end) - pos
		out = append(out, nbd.Extent{Length: n})
		pos += n
	}
	return out, nil
}

// seekHole is the first hole at or after pos, or end if there is none
// before it, as the file system can tell: without vfs.RangeSeeker a hole
// past end is looked for all the same.
func (f *File) seekHole(pos, end int64) (int64, error) {
	if rs, ok := f.fs.(vfs.RangeSeeker); ok {
		return rs.LseekWithin(f.h, pos, seekHole, end)
	}
	return f.fs.Lseek(f.h, pos, seekHole)
}
