package fsck

import (
	"errors"
	"os"
	"slices"

	"github.com/doppelfs/doppel/internal/blob"
	"golang.org/x/sys/unix"
)

// orphanSpace reports the data of segment num that no live chunk covers.
// live holds the Align-rounded ranges of its chunks in offset order. Data
// ranges come from SEEK_DATA/SEEK_HOLE; where the host file system cannot
// tell, the whole file counts as data.
func (c *checker) orphanSpace(num uint32, live []span) error {
	f, err := os.Open(c.segPath(num))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := dataSpans(f)
	if err != nil {
		return &os.PathError{Op: "seek data", Path: f.Name(), Err: err}
	}
	live = merge(live)
	var bytes, first int64
	ranges, j := 0, 0
	for _, d := range data {
		for pos := d.start; pos < d.end; {
			for j < len(live) && live[j].end <= pos {
				j++
			}
			gapEnd := d.end
			if j < len(live) {
				if live[j].start <= pos {
					pos = live[j].end
					continue
				}
				gapEnd = min(d.end, live[j].start)
			}
			if ranges == 0 {
				first = pos
			}
			ranges++
			bytes += gapEnd - pos
			pos = gapEnd
		}
	}
	if ranges > 0 {
		c.rep.ReclaimableBytes += bytes
		c.reportSev(KindOrphanSpace, SeverityReclaimable, noIno,
			"segment %d (%s): %d bytes in %d ranges hold no live chunk (first at offset %d)",
			num, f.Name(), bytes, ranges, first)
	}
	return nil
}

// dataSpans lists f's data ranges, widened to Align boundaries.
func dataSpans(f *os.File) ([]span, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	var out []span
	for off := int64(0); off < st.Size(); {
		start, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if err == unix.ENXIO {
			break
		}
		if err == unix.EINVAL && off == 0 { // no SEEK_DATA here
			return []span{{0, roundUp(st.Size())}}, nil
		}
		if err != nil {
			return nil, err
		}
		end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
		if err != nil {
			return nil, err
		}
		s := span{start &^ (blob.Align - 1), roundUp(end)}
		if n := len(out); n > 0 && s.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, s.end)
		} else {
			out = append(out, s)
		}
		off = end
	}
	return out, nil
}

// merge joins overlapping or touching spans of a list sorted by start.
func merge(spans []span) []span {
	out := slices.Clone(spans)[:0]
	for _, s := range spans {
		if n := len(out); n > 0 && s.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, s.end)
		} else {
			out = append(out, s)
		}
	}
	return out
}
