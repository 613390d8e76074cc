package blob

import (
	"cmp"
	"fmt"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// Span is a byte range [Start, End) of a segment file.
type Span struct{ Start, End int64 }

// LiveSpan is the Align-rounded range loc occupies in a segment file.
func LiveSpan(loc Loc) Span { return SpanAt(loc, Align) }

// SpanAt is the range loc occupies in a store whose chunks start at
// multiples of align (AlignmentOf): its bytes, up to the next boundary.
func SpanAt(loc Loc, align int64) Span {
	start := int64(loc.Offset)
	return Span{start, AlignUp(start+int64(loc.Length), align)}
}

// AlignUp rounds n up to a multiple of align.
func AlignUp(n, align int64) int64 { return (n + align - 1) / align * align }

// DataSpans lists f's data ranges (SEEK_DATA/SEEK_HOLE), widened to Align
// boundaries. Where the host file system cannot tell, the whole file is
// one data range.
func DataSpans(f *os.File) ([]Span, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	var out []Span
	for off := int64(0); off < st.Size(); {
		start, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if err == unix.ENXIO {
			break
		}
		if err == unix.EINVAL && off == 0 { // no SEEK_DATA here
			return []Span{{0, roundUp(st.Size())}}, nil
		}
		if err != nil {
			return nil, err
		}
		end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
		if err != nil {
			return nil, err
		}
		out = append(out, Span{start &^ (Align - 1), roundUp(end)})
		off = end
	}
	return MergeSpans(out), nil
}

// MergeSpans sorts spans and joins the overlapping or touching ones.
func MergeSpans(spans []Span) []Span {
	spans = slices.Clone(spans)
	slices.SortFunc(spans, func(a, b Span) int { return cmp.Compare(a.Start, b.Start) })
	out := spans[:0]
	for _, s := range spans {
		if n := len(out); n > 0 && s.Start <= out[n-1].End {
			out[n-1].End = max(out[n-1].End, s.End)
		} else {
			out = append(out, s)
		}
	}
	return out
}

// Unused returns the parts of data (merged spans) that no live span covers.
func Unused(data, live []Span) []Span {
	live = MergeSpans(live)
	var out []Span
	j := 0
	for _, d := range data {
		for pos := d.Start; pos < d.End; {
			for j < len(live) && live[j].End <= pos {
				j++
			}
			end := d.End
			if j < len(live) {
				if live[j].Start <= pos {
					pos = live[j].End
					continue
				}
				end = min(d.End, live[j].Start)
			}
			out = append(out, Span{pos, end})
			pos = end
		}
	}
	return out
}

// SessionStart is the lowest segment number this open store writes to:
// every segment below it was written by earlier opens only.
func (d *Dir) SessionStart() uint32 { return d.sessionStart }

// Reclaim punches out every data range of sealed segment num that no span
// of live covers, deletes the segment if nothing is left, and returns the
// bytes punched. It is for chunk data no metadata references (written by
// transactions a crash cut short); segments of this session are refused.
func (d *Dir) Reclaim(num uint32, live []Span) (int64, error) {
	if num >= d.sessionStart {
		return 0, fmt.Errorf("blob: reclaim: segment %d belongs to the running session", num)
	}
	s, err := d.use(num)
	if err != nil {
		return 0, err
	}
	defer func() {
		d.mu.Lock()
		d.release(s)
		d.mu.Unlock()
	}()
	data, err := DataSpans(s.f)
	if err != nil {
		return 0, fmt.Errorf("blob: reclaim segment %d: %w", num, err)
	}
	var punched int64
	for _, u := range Unused(data, live) {
		if err := punchHole(s.f, u.Start, u.End-u.Start); err != nil {
			return punched, fmt.Errorf("blob: reclaim segment %d: %w", num, err)
		}
		punched += u.End - u.Start
	}
	d.mu.Lock()
	err = d.maybeRemove(s)
	d.mu.Unlock()
	return punched, err
}
