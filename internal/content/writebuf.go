package content

import (
	"cmp"
	"slices"

	"github.com/google/btree"
)

// Buffer holds a file's written but not yet chunked data as sorted,
// non-overlapping, non-adjacent runs. Contiguous writes grow one run, so
// content-defined chunking sees the same stream a sequential writer wrote and
// shifted content still deduplicates. The runs are kept in a B-tree, so that
// a random writer's tens of thousands of small runs cost O(log n) per write.
// The zero Buffer is empty and ready to use. Not safe for concurrent use.
type Buffer struct {
	t     *btree.BTreeG[Run]
	bytes int64

	// Spare, when set, hands out an empty array that a finished stream
	// gave back (BufPool.Recycled), or nil, for a run that grows past
	// spareFrom bytes: a new stream's run then moves once into an array
	// with room to reach the commit size, instead of doubling there
	// through fresh arrays that the runtime zeroes and Write copies (an
	// NBD client's connections each begin such a run every few dozen
	// MiB). Without one it grows as before, so that a file of a few MiB
	// written and closed gets no array of a stream's size.
	Spare func() []byte
	// spareFrom, when not 0, replaces defaultSpareFrom (tests).
	spareFrom int
}

// defaultSpareFrom is the size past which a growing run takes a Spare
// array.
const defaultSpareFrom = 1 << 20

// Run is a contiguous range of buffered data.
type Run struct {
	Off  int64
	Data []byte

	// arr, when not nil, is the array Data lies in, from index at: the
	// bytes before are free, so data written just before the run is
	// prepended in place (a streaming run's undecided tail coming back in
	// front of what the writer appended meanwhile; see Detach).
	arr []byte
	at  int
}

// End is the offset just past the run.
func (r *Run) End() int64 { return r.Off + int64(len(r.Data)) }

func runLess(a, b Run) bool { return a.Off < b.Off }

func (b *Buffer) tree() *btree.BTreeG[Run] {
	if b.t == nil {
		b.t = btree.NewG(32, runLess)
	}
	return b.t
}

// Bytes is the amount of data buffered.
func (b *Buffer) Bytes() int64 { return b.bytes }

// Len is the number of runs.
func (b *Buffer) Len() int {
	if b.t == nil {
		return 0
	}
	return b.t.Len()
}

// Runs returns the buffered runs in order. The caller may read them and
// must not keep them across other Buffer calls.
func (b *Buffer) Runs() []Run {
	if b.t == nil {
		return nil
	}
	out := make([]Run, 0, b.t.Len())
	b.t.Ascend(func(r Run) bool {
		out = append(out, r)
		return true
	})
	return out
}

// between returns, in order, the runs with End() > start (or >= start
// when touching) and Off < end (or <= end when touching).
func (b *Buffer) between(start, end int64, touching bool) []Run {
	if b.t == nil {
		return nil
	}
	pivot := start
	b.t.DescendLessOrEqual(Run{Off: start}, func(r Run) bool {
		if r.End() > start || (touching && r.End() == start) {
			pivot = r.Off
		}
		return false
	})
	var out []Run
	b.t.AscendGreaterOrEqual(Run{Off: pivot}, func(r Run) bool {
		if r.Off > end || (!touching && r.Off == end) {
			return false
		}
		if r.End() > start || (touching && r.End() == start) {
			out = append(out, r)
		}
		return true
	})
	return out
}

// RunAt returns the run holding the byte at off.
func (b *Buffer) RunAt(off int64) (Run, bool) {
	rs := b.between(off, off+1, false)
	if len(rs) == 0 {
		return Run{}, false
	}
	return rs[0], true
}

// Write buffers p at off, replacing buffered bytes it overlaps.
func (b *Buffer) Write(off int64, p []byte) {
	if len(p) == 0 {
		return
	}
	end := off + int64(len(p))
	rs := b.between(off, end, true) // runs overlapping or touching [off, end)
	if len(rs) == 1 && rs[0].Off <= off && rs[0].End() >= end {
		copy(rs[0].Data[off-rs[0].Off:], p) // inside one run
		return
	}
	t := b.tree()
	if len(rs) == 1 && rs[0].End() == off {
		r := rs[0]
		b.roomToAppend(&r, len(p))
		r.Data = append(r.Data, p...) // sequential append
		t.ReplaceOrInsert(r)
		b.bytes += int64(len(p))
		return
	}
	if len(rs) == 1 && rs[0].Off == end && rs[0].arr != nil && rs[0].at >= len(p) {
		r := rs[0] // prepended in place
		t.Delete(r)
		r.at -= len(p)
		copy(r.arr[r.at:], p)
		r.Off, r.Data = off, r.arr[r.at:r.at+len(p)+len(r.Data)]
		t.ReplaceOrInsert(r)
		b.bytes += int64(len(p))
		return
	}
	start, stop := off, end
	if len(rs) > 0 {
		start = min(start, rs[0].Off)
		stop = max(stop, rs[len(rs)-1].End())
	}
	merged := Run{Off: start}
	inFirst := len(rs) > 0 && rs[0].Off == start
	if inFirst {
		// The runs merge into the first one's array, grown if need be:
		// requests that arrive out of order (an NBD client's) fill a gap
		// behind a long run again and again, and copying that run into a
		// new array each time cost as much as the run.
		merged = rs[0]
		if need := int(stop - start); need > cap(merged.Data) {
			merged.arr = nil
			merged.Data = b.grow(merged.Data, need)
		}
		merged.Data = merged.Data[:stop-start]
	} else {
		merged.Data = make([]byte, stop-start)
	}
	for i, r := range rs {
		if i > 0 || !inFirst { // the first run's bytes are in place already
			copy(merged.Data[r.Off-start:], r.Data)
		}
		b.bytes -= int64(len(r.Data))
		t.Delete(r)
	}
	copy(merged.Data[off-start:], p)
	b.bytes += int64(len(merged.Data))
	t.ReplaceOrInsert(merged)
}

// WriteFrom buffers n bytes at off that fill reads into the buffer's own
// memory, saving Write's copy where it can: appended to the run that ends
// at off, or as a new run touching none. Elsewhere fill reads into a
// scratch array that Write then copies. fill is called once, with n
// bytes; if it fails, the buffer is left as it was (what fill read is
// dropped) and its error is returned.
func (b *Buffer) WriteFrom(off int64, n int, fill func(dst []byte) error) error {
	if n == 0 {
		return nil
	}
	end := off + int64(n)
	rs := b.between(off, end, true)
	switch {
	case len(rs) == 1 && rs[0].End() == off:
		r := rs[0]
		b.roomToAppend(&r, n) // on failure the run stays in its old array
		if err := fill(r.Data[len(r.Data) : len(r.Data)+n]); err != nil {
			return err
		}
		r.Data = r.Data[:len(r.Data)+n]
		b.tree().ReplaceOrInsert(r)
		b.bytes += int64(n)
		return nil
	case len(rs) == 0:
		data := make([]byte, n)
		if err := fill(data); err != nil {
			return err
		}
		b.tree().ReplaceOrInsert(Run{Off: off, Data: data})
		b.bytes += int64(n)
		return nil
	}
	scratch := make([]byte, n)
	if err := fill(scratch); err != nil {
		return err
	}
	b.Write(off, scratch)
	return nil
}

// roomToAppend moves run r to a new array when n more bytes do not fit
// in its own, one with room for as much again: append's own growth, a
// quarter for large slices, copied a run that grows to 8 MiB in 256 KiB
// writes about five times.
func (b *Buffer) roomToAppend(r *Run, n int) {
	if len(r.Data)+n > cap(r.Data) {
		r.arr = nil
		r.Data = b.grow(r.Data, len(r.Data)+n)
	}
}

// roomFor returns data in an array of twice n bytes, n > cap(data).
func roomFor(data []byte, n int) []byte {
	return slices.Grow(data, 2*n-len(data))
}

// grow returns data in an array with room for n bytes, n > cap(data):
// a Spare one when the run has grown past spareFrom and one that fits is
// there, else roomFor's.
func (b *Buffer) grow(data []byte, n int) []byte {
	from := cmp.Or(b.spareFrom, defaultSpareFrom)
	if b.Spare != nil && n > from {
		if spare := b.Spare(); spare != nil && cap(spare) >= n {
			return append(spare[:0], data...)
		}
	}
	return roomFor(data, n)
}

// Overlay copies buffered bytes over dst, which holds file data at off.
func (b *Buffer) Overlay(off int64, dst []byte) {
	end := off + int64(len(dst))
	for _, r := range b.between(off, end, false) {
		lo, hi := max(off, r.Off), min(end, r.End())
		copy(dst[lo-off:hi-off], r.Data[lo-r.Off:hi-r.Off])
	}
}

// Discard drops buffered data in [start, end).
func (b *Buffer) Discard(start, end int64) {
	if end <= start {
		return // splitting a run around nothing would leave adjacent runs
	}
	for _, r := range b.between(start, end, false) {
		b.t.Delete(r)
		b.bytes -= int64(len(r.Data))
		if r.Off < start {
			left := r
			left.Data = r.Data[:start-r.Off]
			b.t.ReplaceOrInsert(left)
			b.bytes += int64(len(left.Data))
		}
		if r.End() > end {
			right := Run{Off: end, Data: append([]byte(nil), r.Data[end-r.Off:]...)}
			b.t.ReplaceOrInsert(right)
			b.bytes += int64(len(right.Data))
		}
	}
}

// Consume drops the first n bytes of the run starting at off after they
// were committed. The remainder keeps its memory when that leaves room
// for reserve more bytes (a streaming writer appends there without
// reallocation); otherwise it moves to a buffer with that room, so that
// the committed prefix's memory can be freed.
func (b *Buffer) Consume(off int64, n, reserve int) {
	r, ok := b.tree().Delete(Run{Off: off})
	if !ok {
		return
	}
	b.bytes -= int64(n)
	if n == len(r.Data) {
		return
	}
	r.Off += int64(n)
	if rest := r.Data[n:]; cap(rest)-len(rest) >= reserve {
		r.Data = rest
		if r.arr != nil {
			r.at += n // the consumed head is free: room to prepend
		}
	} else {
		rest := make([]byte, len(r.Data)-n, len(r.Data)-n+reserve)
		copy(rest, r.Data[n:])
		r.Data, r.arr = rest, nil
	}
	b.t.ReplaceOrInsert(r)
}

// Detach hands the run starting at off to a background commit: the run as
// it was is returned, and only its last keep bytes stay buffered, copied
// into spare at index head (spare's capacity should leave the writer room
// to go on appending). The head bytes before them are left free, so that
// up to head bytes written just before the kept ones later are prepended
// in place. The caller owns the returned memory; Buffer never touches it
// again.
func (b *Buffer) Detach(off int64, keep int, spare []byte, head int) Run {
	r, ok := b.tree().Delete(Run{Off: off})
	if !ok {
		return Run{}
	}
	keep = max(0, min(keep, len(r.Data)))
	cut := len(r.Data) - keep
	b.bytes -= int64(cut)
	if keep > 0 {
		k := Run{Off: r.Off + int64(cut)}
		if head > 0 && cap(spare) >= head+keep {
			k.arr, k.at = spare[:cap(spare)], head
		}
		k.Data = append(spare[k.at:k.at], r.Data[cut:]...)
		b.t.ReplaceOrInsert(k)
	}
	return r
}

// Array is the whole array r's data lies in, when known (the head before
// r.Data included), else r.Data: what to recycle once r is done with.
func (r *Run) Array() []byte {
	if r.arr != nil {
		return r.arr[:0]
	}
	return r.Data
}

// MaxEnd is the offset just past the last buffered byte, or 0.
func (b *Buffer) MaxEnd() int64 {
	if b.t == nil {
		return 0
	}
	r, ok := b.t.Max()
	if !ok {
		return 0
	}
	return r.End()
}

// Drop removes [start, end) after it was committed. When it is the head of
// a run (the usual case, a streaming writer), the rest moves to a buffer
// with room for reserve more bytes, as Consume does.
func (b *Buffer) Drop(start, end int64, reserve int) {
	if r, ok := b.tree().Get(Run{Off: start}); ok && r.End() >= end {
		b.Consume(start, int(end-start), reserve)
		return
	}
	b.Discard(start, end)
}
