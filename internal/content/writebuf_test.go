package content

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

// bufModel is the reference for Buffer: the file's bytes and which of them
// are buffered.
type bufModel struct {
	data    []byte
	written []bool
}

func newBufModel(size int) *bufModel {
	return &bufModel{data: make([]byte, size), written: make([]bool, size)}
}

func (m *bufModel) write(off int64, p []byte) {
	copy(m.data[off:], p)
	for i := range p {
		m.written[int(off)+i] = true
	}
}

func (m *bufModel) discard(start, end int64) {
	for i := max(start, 0); i < min(end, int64(len(m.written))); i++ {
		m.written[i] = false
	}
}

// checkBuffer verifies Buffer's invariants and that it holds exactly the
// model's buffered bytes.
func checkBuffer(t *testing.T, b *Buffer, m *bufModel) {
	t.Helper()
	runs := b.Runs()
	var sum int64
	covered := make([]bool, len(m.written))
	for k, r := range runs {
		if len(r.Data) == 0 {
			t.Fatalf("run %d at %d is empty", k, r.Off)
		}
		if k > 0 && runs[k-1].End() >= r.Off {
			// Adjacent runs must have been merged: chunking needs one stream.
			t.Fatalf("run %d [%d,%d) overlaps or touches run %d [%d,%d)",
				k-1, runs[k-1].Off, runs[k-1].End(), k, r.Off, r.End())
		}
		if r.Off < 0 || r.End() > int64(len(m.data)) {
			t.Fatalf("run %d [%d,%d) outside the model", k, r.Off, r.End())
		}
		sum += int64(len(r.Data))
		for i, c := range r.Data {
			pos := r.Off + int64(i)
			covered[pos] = true
			if !m.written[pos] {
				t.Fatalf("byte %d is buffered but was never written or was discarded", pos)
			}
			if c != m.data[pos] {
				t.Fatalf("byte %d: buffer has %#x, model %#x", pos, c, m.data[pos])
			}
		}
	}
	for pos, w := range m.written {
		if w && !covered[pos] {
			t.Fatalf("byte %d was written but is not buffered", pos)
		}
	}
	if b.Bytes() != sum {
		t.Fatalf("Bytes() = %d, runs hold %d", b.Bytes(), sum)
	}
	if b.Len() != len(runs) {
		t.Fatalf("Len() = %d, want %d runs", b.Len(), len(runs))
	}
	for pos := int64(0); pos < int64(len(m.written)); pos += 7 {
		r, ok := b.RunAt(pos)
		if ok != m.written[pos] || (ok && (r.Off > pos || r.End() <= pos)) {
			t.Fatalf("RunAt(%d) = [%d,%d) %v; byte buffered: %v", pos, r.Off, r.End(), ok, m.written[pos])
		}
	}
	wantEnd := int64(0)
	if len(runs) > 0 {
		wantEnd = runs[len(runs)-1].End()
	}
	if b.MaxEnd() != wantEnd {
		t.Fatalf("MaxEnd() = %d, want %d", b.MaxEnd(), wantEnd)
	}
}

// checkOverlay overlays the buffer on a window of "file data" and checks
// that buffered positions show the model's bytes and others are untouched.
func checkOverlay(t *testing.T, b *Buffer, m *bufModel, off int64, n int) {
	t.Helper()
	const fileByte = 0xee
	dst := bytes.Repeat([]byte{fileByte}, n)
	b.Overlay(off, dst)
	for i, c := range dst {
		pos := off + int64(i)
		want := byte(fileByte)
		if pos < int64(len(m.written)) && m.written[pos] {
			want = m.data[pos]
		}
		if c != want {
			t.Fatalf("Overlay(%d, %d): byte %d = %#x, want %#x", off, n, pos, c, want)
		}
	}
}

func TestBufferModel(t *testing.T) {
	const space = 4096
	seeds := uint64(40)
	if testing.Short() || raceEnabled {
		seeds = 10
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0xb0f))
			var b Buffer
			if seed%2 == 0 {
				// Runs past 512 bytes move into spare arrays that hold
				// stale bytes, as a pool's do, when there is one; some
				// are too small.
				b.spareFrom = 512
				b.Spare = func() []byte {
					if r.IntN(4) == 0 {
						return nil
					}
					return bytes.Repeat([]byte{0xee}, 256+r.IntN(space))[:0]
				}
			}
			m := newBufModel(space)
			var ops []string // recent operations, for the failure message
			defer func() {
				if t.Failed() {
					t.Logf("seed %d, last operations:\n%v", seed, ops[max(0, len(ops)-12):])
				}
			}()
			for range 600 {
				runs := b.Runs()
				switch op := r.IntN(10); {
				case op < 3:
					off, n := bufWriteRange(r, runs, space)
					p := testutil.RandBytes(r, n)
					ops = append(ops, fmt.Sprintf("Write(%d, %d bytes)", off, n))
					b.Write(off, p)
					m.write(off, p)
					clear(p) // the buffer must hold its own copy
				case op < 5:
					off, n := bufWriteRange(r, runs, space)
					p := testutil.RandBytes(r, n)
					fail := r.IntN(5) == 0 // a connection lost in the payload
					ops = append(ops, fmt.Sprintf("WriteFrom(%d, %d bytes, failing %v)", off, n, fail))
					calls := 0
					err := b.WriteFrom(off, n, func(dst []byte) error {
						calls++
						if len(dst) != n {
							t.Fatalf("fill got %d bytes, want %d", len(dst), n)
						}
						if fail {
							copy(dst, p[:n/2]) // read in part, then lost
							return io.ErrUnexpectedEOF
						}
						copy(dst, p)
						return nil
					})
					if want := n > 0; (calls == 1) != want || calls > 1 {
						t.Fatalf("fill called %d times for %d bytes", calls, n)
					}
					if fail && n > 0 {
						if err != io.ErrUnexpectedEOF {
							t.Fatalf("WriteFrom with a failing fill returned %v", err)
						}
					} else {
						if err != nil {
							t.Fatalf("WriteFrom: %v", err)
						}
						m.write(off, p)
					}
				case op < 7:
					start := r.Int64N(space)
					end := start + 1 + r.Int64N(min(600, space-start))
					ops = append(ops, fmt.Sprintf("Discard(%d, %d)", start, end))
					b.Discard(start, end)
					m.discard(start, end)
				case op < 9 && len(runs) > 0 && r.IntN(4) > 0:
					i := r.IntN(len(runs))
					run := runs[i]
					n := len(run.Data)
					if r.IntN(3) > 0 {
						n = r.IntN(len(run.Data) + 1)
					}
					reserve := r.IntN(300)
					ops = append(ops, fmt.Sprintf("Consume(%d, %d, %d) of run [%d,%d)", i, n, reserve, run.Off, run.End()))
					off, total := run.Off, len(run.Data)
					b.Consume(run.Off, n, reserve)
					m.discard(off, off+int64(n))
					if n < total {
						rest, _ := b.RunAt(off + int64(n))
						if rest.Off != off+int64(n) || len(rest.Data) != total-n {
							t.Fatalf("after Consume run %d is [%d,%d), want [%d,%d)", i, rest.Off, rest.End(), off+int64(n), off+int64(total))
						}
						if cap(rest.Data)-len(rest.Data) < reserve {
							t.Fatalf("after Consume(reserve %d) run has room for %d more bytes", reserve, cap(rest.Data)-len(rest.Data))
						}
					}
				case op < 9 && len(runs) > 0 && r.IntN(4) == 0:
					i := r.IntN(len(runs))
					run := runs[i]
					keep := r.IntN(len(run.Data) + 1)
					head := r.IntN(100)
					ops = append(ops, fmt.Sprintf("Detach(%d, %d, head %d) of run [%d,%d)", i, keep, head, run.Off, run.End()))
					off, total := run.Off, len(run.Data)
					got := b.Detach(run.Off, keep, make([]byte, 0, r.IntN(300)), head)
					if got.Off != off || len(got.Data) != total {
						t.Fatalf("Detach returned [%d,%d), want the run [%d,%d)", got.Off, got.End(), off, off+int64(total))
					}
					m.discard(off, off+int64(total-keep))
					clear(got.Data) // the caller owns it: the buffer must not read it again
				default:
					off := r.Int64N(space + 100)
					n := r.IntN(800)
					ops = append(ops, fmt.Sprintf("Overlay(%d, %d)", off, n))
					checkOverlay(t, &b, m, off, n)
				}
				checkBuffer(t, &b, m)
			}
			checkOverlay(t, &b, m, 0, space)
		})
	}
}

// bufWriteRange picks a write range, favouring the shapes Write has fast
// paths for: inside one run, appending at a run's end, and exactly
// touching runs on both sides.
func bufWriteRange(r *rand.Rand, runs []Run, space int64) (int64, int) {
	if len(runs) > 0 {
		run := runs[r.IntN(len(runs))]
		switch r.IntN(5) {
		case 0: // inside the run
			off := run.Off + r.Int64N(int64(len(run.Data)))
			n := 1 + r.Int64N(run.End()-off)
			return off, int(n)
		case 1: // sequential append
			if run.End() < space {
				return run.End(), 1 + r.IntN(int(min(300, space-run.End())))
			}
		case 3: // end exactly where the run starts (prepending)
			if run.Off > 0 {
				n := 1 + r.Int64N(min(120, run.Off))
				return run.Off - n, int(n)
			}
		case 2: // fill the gap up to the next run exactly
			for k := range runs {
				if runs[k].Off == run.Off && k+1 < len(runs) {
					return run.End(), int(runs[k+1].Off - run.End())
				}
			}
		}
	}
	off := r.Int64N(space - 1)
	return off, 1 + r.IntN(int(min(400, space-off)))
}

func TestBufferWriteCases(t *testing.T) {
	type run struct {
		off int64
		s   string
	}
	tests := []struct {
		name   string
		writes []run
		want   []run
	}{
		{"single", []run{{10, "abc"}}, []run{{10, "abc"}}},
		{"append", []run{{0, "ab"}, {2, "cd"}}, []run{{0, "abcd"}}},
		{"prepend touching", []run{{2, "cd"}, {0, "ab"}}, []run{{0, "abcd"}}},
		{"gap kept", []run{{0, "ab"}, {3, "cd"}}, []run{{0, "ab"}, {3, "cd"}}},
		{"inside", []run{{0, "abcdef"}, {2, "XY"}}, []run{{0, "abXYef"}}},
		{"bridge", []run{{0, "ab"}, {4, "ef"}, {2, "cd"}}, []run{{0, "abcdef"}}},
		{"cover several", []run{{2, "a"}, {5, "b"}, {8, "c"}, {1, "XXXXXXXXXX"}}, []run{{1, "XXXXXXXXXX"}}},
		{"overlap tail", []run{{0, "abcd"}, {2, "XYZW"}}, []run{{0, "abXYZW"}}},
		{"overlap head", []run{{4, "abcd"}, {2, "XYZ"}}, []run{{2, "XYZbcd"}}},
		{"empty write", []run{{0, "ab"}, {7, ""}}, []run{{0, "ab"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b Buffer
			for _, w := range tc.writes {
				b.Write(w.off, []byte(w.s))
			}
			var got []run
			var n int64
			for _, r := range b.Runs() {
				got = append(got, run{r.Off, string(r.Data)})
				n += int64(len(r.Data))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("runs %v, want %v", got, tc.want)
			}
			if b.Bytes() != n {
				t.Errorf("Bytes() = %d, want %d", b.Bytes(), n)
			}
		})
	}
}

// A write that fills the gap behind a run (out-of-order requests) merges
// into that run's array when it has room, rather than copying the run into
// a new one; a run that grows by appends gets room for as much again.
func TestBufferGapFillKeepsTheRunsArray(t *testing.T) {
	var b Buffer
	block := func(c byte) []byte { return bytes.Repeat([]byte{c}, 4<<10) }
	b.Write(0, block('a'))
	b.Write(4<<10, block('b')) // grows: room for as much again
	first := &b.Runs()[0].Data[0]
	b.Write(12<<10, block('d')) // a run of its own, behind a gap
	b.Write(8<<10, block('c'))  // fills the gap: one run of 16 KiB
	rs := b.Runs()
	if len(rs) != 1 || rs[0].Off != 0 {
		t.Fatalf("%d runs; want one at 0", len(rs))
	}
	want := slices.Concat(block('a'), block('b'), block('c'), block('d'))
	if !bytes.Equal(rs[0].Data, want) || b.Bytes() != int64(len(want)) {
		t.Fatalf("run of %d bytes (Bytes %d), want %d bytes of a, b, c, d", len(rs[0].Data), b.Bytes(), len(want))
	}
	if &rs[0].Data[0] != first {
		t.Error("the merge copied the first run into a new array though it had room")
	}
}

func TestBufferGrowsIntoSpare(t *testing.T) {
	var b Buffer
	spares := 0
	b.Spare = func() []byte {
		spares++
		return bytes.Repeat([]byte{0xee}, 10<<20)[:0]
	}
	var want []byte
	for i := range 16 { // a stream of 256 KiB writes, to 4 MiB
		p := bytes.Repeat([]byte{byte(i)}, 256<<10)
		b.Write(int64(len(want)), p)
		want = append(want, p...)
	}
	rs := b.Runs()
	if len(rs) != 1 || !bytes.Equal(rs[0].Data, want) {
		t.Fatalf("%d runs; want one run of the %d bytes written", len(rs), len(want))
	}
	if spares != 1 || cap(rs[0].Data) != 10<<20 {
		t.Errorf("%d spare arrays taken, run's capacity %d; want one, of 10 MiB", spares, cap(rs[0].Data))
	}
}

func TestBufferDiscardCases(t *testing.T) {
	tests := []struct {
		name       string
		start, end int64
		want       string // runs as off:data
	}{
		{"none", 20, 30, "[0:abcdefgh 10:ij]"},
		{"all", 0, 100, "[]"},
		{"head", 0, 3, "[3:defgh 10:ij]"},
		{"tail", 5, 11, "[0:abcde 11:j]"},
		{"middle", 2, 4, "[0:ab 4:efgh 10:ij]"},
		{"whole run", 10, 12, "[0:abcdefgh]"},
		{"gap only", 8, 10, "[0:abcdefgh 10:ij]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b Buffer
			b.Write(0, []byte("abcdefgh"))
			b.Write(10, []byte("ij"))
			b.Discard(tc.start, tc.end)
			var got []string
			var n int64
			for _, r := range b.Runs() {
				got = append(got, fmt.Sprintf("%d:%s", r.Off, r.Data))
				n += int64(len(r.Data))
			}
			if s := fmt.Sprint(got); s != tc.want {
				t.Errorf("Discard(%d, %d): runs %s, want %s", tc.start, tc.end, s, tc.want)
			}
			if b.Bytes() != n {
				t.Errorf("Bytes() = %d, want %d", b.Bytes(), n)
			}
		})
	}
}

// TestBufferDiscardEmptyRange: dropping nothing must change nothing. An
// empty range inside a run must not split it into two adjacent runs, which
// would make the chunker see two streams and cut at the split.
func TestBufferDiscardEmptyRange(t *testing.T) {
	var b Buffer
	b.Write(0, []byte("abcdefgh"))
	b.Discard(4, 4)
	m := newBufModel(16)
	m.write(0, []byte("abcdefgh"))
	checkBuffer(t, &b, m)
}

func TestBufferDiscardThenAppend(t *testing.T) {
	// Discard keeps the left part's backing array; appending to it must not
	// change the right part, which used to share that array.
	var b Buffer
	b.Write(0, []byte("abcdefghij"))
	b.Discard(3, 5)
	b.Write(3, []byte("XY"))
	if got := string(b.Runs()[0].Data); got != "abcXYfghij" || len(b.Runs()) != 1 {
		t.Fatalf("runs after discard and refill: %v", b.Runs())
	}
	b.Discard(4, 10)
	b.Write(4, []byte("1234567"))
	if got := string(b.Runs()[0].Data); got != "abcX1234567" {
		t.Fatalf("run after discard and append: %q", got)
	}
}

func TestBufferConsumeReserveAvoidsRealloc(t *testing.T) {
	// A streaming writer appends to the remainder after each flush: with
	// enough reserve the appends land in place.
	var b Buffer
	b.Write(0, bytes.Repeat([]byte{1}, 1000))
	b.Consume(0, 900, 500)
	before := &b.Runs()[0].Data[0]
	b.Write(1000, bytes.Repeat([]byte{2}, 500))
	r := b.Runs()
	if len(r) != 1 || r[0].Off != 900 || len(r[0].Data) != 600 {
		t.Fatalf("runs after consume and append: off %d len %d (%d runs)", r[0].Off, len(r[0].Data), len(r))
	}
	if &r[0].Data[0] != before {
		t.Error("append within the reserve reallocated the run")
	}
	if b.Bytes() != 600 {
		t.Errorf("Bytes() = %d, want 600", b.Bytes())
	}
}

func TestBufferConsumeLastRunKeepsOthers(t *testing.T) {
	// The flusher consumes runs from the last to the first, so indexes stay
	// valid; removing a run must keep the others intact.
	var b Buffer
	b.Write(0, []byte("aaaa"))
	b.Write(10, []byte("bbbb"))
	b.Write(20, []byte("cccc"))
	b.Consume(20, 4, 0)
	b.Consume(10, 2, 0)
	b.Consume(0, 4, 0)
	r := b.Runs()
	if len(r) != 1 || r[0].Off != 12 || string(r[0].Data) != "bb" || b.Bytes() != 2 {
		t.Fatalf("runs %v, Bytes %d; want [12:bb], 2", r, b.Bytes())
	}
}

func TestBufferDetachKeepsTail(t *testing.T) {
	// A streaming writer detaches a run and appends to the tail it kept:
	// the appends land in the spare array, and the detached bytes are
	// never touched again.
	var b Buffer
	b.Write(0, []byte("aaaabbbbcc"))
	spare := make([]byte, 0, 64)
	head := b.Detach(0, 2, spare, 0)
	if head.Off != 0 || string(head.Data) != "aaaabbbbcc" {
		t.Fatalf("detached %d:%q, want 0:aaaabbbbcc", head.Off, head.Data)
	}
	b.Write(10, []byte("dd"))
	r := b.Runs()
	if len(r) != 1 || r[0].Off != 8 || string(r[0].Data) != "ccdd" || b.Bytes() != 4 {
		t.Fatalf("runs %v, Bytes %d; want [8:ccdd], 4", r, b.Bytes())
	}
	if &r[0].Data[0] != &spare[:1][0] {
		t.Error("the kept tail is not in the spare array")
	}
	if string(head.Data) != "aaaabbbbcc" {
		t.Errorf("detached bytes changed to %q", head.Data)
	}
	b.Detach(8, 0, nil, 0)
	if len(b.Runs()) != 0 || b.Bytes() != 0 {
		t.Fatalf("after detaching everything: runs %v, Bytes %d", b.Runs(), b.Bytes())
	}
}

func TestBufferPrependsIntoDetachHead(t *testing.T) {
	// A streaming run's undecided tail comes back in front of the bytes
	// the writer kept and appended meanwhile: it is copied into the head
	// Detach left free, not merged into a new array.
	var b Buffer
	b.Write(100, []byte("aaaabbbbcc"))
	spare := make([]byte, 0, 64)
	b.Detach(100, 2, spare, 8)
	b.Write(110, []byte("dd"))
	b.Write(104, []byte("BBBB"))
	r := b.Runs()
	if len(r) != 1 || r[0].Off != 104 || string(r[0].Data) != "BBBBccdd" || b.Bytes() != 8 {
		t.Fatalf("runs %v, Bytes %d; want [104:BBBBccdd], 8", r, b.Bytes())
	}
	if &r[0].Data[0] != &spare[:5][4] {
		t.Error("the prepended bytes are not in the spare array's head")
	}
	// More than the head has left: merged into a new array, still right.
	b.Write(98, []byte("xxxxxx"))
	r = b.Runs()
	if len(r) != 1 || r[0].Off != 98 || string(r[0].Data) != "xxxxxxBBBBccdd" || b.Bytes() != 14 {
		t.Fatalf("runs %v, Bytes %d; want [98:xxxxxxBBBBccdd], 14", r, b.Bytes())
	}
}

// BenchmarkBufferRun builds an 8 MiB run of a fresh buffer from 256 KiB
// writes (an NBD client's copy), the way a run grows before its first
// stream: in order, and in swapped pairs, each second write filling the
// gap behind the run (requests that arrive out of order).
func BenchmarkBufferRun(b *testing.B) {
	const piece, size = 256 << 10, 8 << 20
	p := make([]byte, piece)
	for _, c := range []struct {
		name  string
		order []int64 // offsets within each pair of pieces, in write order
	}{
		{"in-order", []int64{0, piece}},
		{"swapped-pairs", []int64{piece, 0}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				var buf Buffer
				for off := int64(0); off < size; off += 2 * piece {
					for _, d := range c.order {
						buf.Write(off+d, p)
					}
				}
			}
		})
	}
}
