package content

import "sort"

// Buffer holds a file's written but not yet chunked data as sorted,
// non-overlapping, non-adjacent runs. Contiguous writes grow one run, so
// content-defined chunking sees the same stream a sequential writer wrote and
// shifted content still deduplicates. Not safe for concurrent use.
type Buffer struct {
	runs  []Run
	bytes int64
}

// Run is a contiguous range of buffered data.
type Run struct {
	Off  int64
	Data []byte
}

// End is the offset just past the run.
func (r *Run) End() int64 { return r.Off + int64(len(r.Data)) }

// Bytes is the amount of data buffered.
func (b *Buffer) Bytes() int64 { return b.bytes }

// Runs returns the buffered runs in order. The caller may read them and
// must not keep them across other Buffer calls.
func (b *Buffer) Runs() []Run { return b.runs }

// Write buffers p at off, replacing buffered bytes it overlaps.
func (b *Buffer) Write(off int64, p []byte) {
	if len(p) == 0 {
		return
	}
	end := off + int64(len(p))
	// Runs i..j-1 overlap or touch [off, end).
	i := sort.Search(len(b.runs), func(k int) bool { return b.runs[k].End() >= off })
	j := i
	for j < len(b.runs) && b.runs[j].Off <= end {
		j++
	}
	if j == i+1 && b.runs[i].Off <= off && b.runs[i].End() >= end {
		copy(b.runs[i].Data[off-b.runs[i].Off:], p) // inside one run
		return
	}
	if j == i+1 && b.runs[i].End() == off {
		b.runs[i].Data = append(b.runs[i].Data, p...) // sequential append
		b.bytes += int64(len(p))
		return
	}
	start, stop := off, end
	if i < j {
		start = min(start, b.runs[i].Off)
		stop = max(stop, b.runs[j-1].End())
	}
	merged := make([]byte, stop-start, growCap(stop-start))
	for _, r := range b.runs[i:j] {
		copy(merged[r.Off-start:], r.Data)
		b.bytes -= int64(len(r.Data))
	}
	copy(merged[off-start:], p)
	b.bytes += int64(len(merged))
	b.runs = append(b.runs[:i], append([]Run{{Off: start, Data: merged}}, b.runs[j:]...)...)
}

func growCap(n int64) int64 { return n + n/4 }

// Overlay copies buffered bytes over dst, which holds file data at off.
func (b *Buffer) Overlay(off int64, dst []byte) {
	end := off + int64(len(dst))
	i := sort.Search(len(b.runs), func(k int) bool { return b.runs[k].End() > off })
	for ; i < len(b.runs) && b.runs[i].Off < end; i++ {
		r := &b.runs[i]
		lo, hi := max(off, r.Off), min(end, r.End())
		copy(dst[lo-off:hi-off], r.Data[lo-r.Off:hi-r.Off])
	}
}

// Discard drops buffered data in [start, end).
func (b *Buffer) Discard(start, end int64) {
	if end <= start {
		return // splitting a run around nothing would leave adjacent runs
	}
	var out []Run
	for _, r := range b.runs {
		if r.End() <= start || r.Off >= end {
			out = append(out, r)
			continue
		}
		b.bytes -= int64(len(r.Data))
		if r.Off < start {
			left := Run{Off: r.Off, Data: r.Data[:start-r.Off]}
			out = append(out, left)
			b.bytes += int64(len(left.Data))
		}
		if r.End() > end {
			right := Run{Off: end, Data: append([]byte(nil), r.Data[end-r.Off:]...)}
			out = append(out, right)
			b.bytes += int64(len(right.Data))
		}
	}
	b.runs = out
}

// Consume drops the first n bytes of run i after they were committed. The
// remainder keeps its memory when that leaves room for reserve more bytes
// (a streaming writer appends there without reallocation); otherwise it
// moves to a buffer with that room, so that the committed prefix's memory
// can be freed.
func (b *Buffer) Consume(i, n, reserve int) {
	r := &b.runs[i]
	b.bytes -= int64(n)
	if n == len(r.Data) {
		b.runs = append(b.runs[:i], b.runs[i+1:]...)
		return
	}
	r.Off += int64(n)
	if rest := r.Data[n:]; cap(rest)-len(rest) >= reserve {
		r.Data = rest
		return
	}
	rest := make([]byte, len(r.Data)-n, len(r.Data)-n+reserve)
	copy(rest, r.Data[n:])
	r.Data = rest
}

// Detach hands run i to a background commit: the run as it was is
// returned, and only its last keep bytes stay buffered, copied into spare
// (whose capacity should leave the writer room to go on appending). The
// caller owns the returned memory; Buffer never touches it again.
func (b *Buffer) Detach(i, keep int, spare []byte) Run {
	r := b.runs[i]
	keep = min(keep, len(r.Data))
	if keep <= 0 {
		b.runs = append(b.runs[:i], b.runs[i+1:]...)
		b.bytes -= int64(len(r.Data))
		return r
	}
	cut := len(r.Data) - keep
	b.runs[i] = Run{Off: r.Off + int64(cut), Data: append(spare[:0], r.Data[cut:]...)}
	b.bytes -= int64(cut)
	return r
}

// MaxEnd is the offset just past the last buffered byte, or 0.
func (b *Buffer) MaxEnd() int64 {
	if len(b.runs) == 0 {
		return 0
	}
	return b.runs[len(b.runs)-1].End()
}

// Drop removes [start, end) after it was committed. When it is the head of
// a run (the usual case, a streaming writer), the rest moves to a buffer
// with room for reserve more bytes, as Consume does.
func (b *Buffer) Drop(start, end int64, reserve int) {
	for i, r := range b.runs {
		if r.Off == start && r.End() >= end {
			b.Consume(i, int(end-start), reserve)
			return
		}
	}
	b.Discard(start, end)
}
