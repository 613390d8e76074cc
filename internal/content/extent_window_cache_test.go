package content

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestExtentWindowsModel: random writes, zero writes, punches and clone
// copies of a file of 4 KiB blocks, interleaved with what makes and uses
// extent windows (sequential reads, SeekHoleBefore over long ranges) and
// with random reads and seeks, all compared with a reference image. A
// window that outlived a change of the extents it holds reads stale
// bytes or finds a stale hole. Seeded (DOPPEL_TEST_SEED replays it).
func TestExtentWindowsModel(t *testing.T) {
	r := testutil.Rand(t)
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K")})
	const size = 1 << 20
	const blk = 4096
	model := make([]byte, size)
	v.write(1, 0, model[:blk]) // the file exists; all zeros is all holes
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s\nlast steps:\n%v", fmt.Sprintf(format, args...), log[max(0, len(log)-12):])
	}
	// hole reports whether [off, off+n) of the model is stored as a hole:
	// a block of zeros is not stored (written, zero writes and punches
	// alike).
	holeAt := func(off int64) bool {
		b := off / blk * blk
		return bytes.Count(model[b:b+blk], []byte{0}) == blk
	}
	seqPos := int64(0)
	for step := range 3000 {
		off := int64(r.IntN(size/blk)) * blk
		n := int64(1+r.IntN(16)) * blk
		n = min(n, size-off)
		switch op := r.IntN(10); op {
		case 0, 1: // write data, sometimes with zero blocks in it
			d := testutil.RandBytes(r, int(n))
			if r.IntN(3) == 0 {
				clear(d[:blk])
			}
			v.write(1, off, d)
			copy(model[off:], d)
			log = append(log, fmt.Sprintf("write %d+%d", off, n))
		case 2: // punch
			v.do(func(tx *Tx) error { _, err := tx.Punch(1, off, off+n); return err })
			clear(model[off : off+n])
			log = append(log, fmt.Sprintf("punch %d+%d", off, n))
		case 3: // sequential reads from where the last ones ended
			for range 4 {
				if seqPos >= size {
					seqPos = 0
				}
				m := min(int64(64<<10), size-seqPos)
				if got := v.read(1, seqPos, int(m)); !bytes.Equal(got, model[seqPos:seqPos+m]) {
					fail("step %d: sequential read at %d differs at byte %d", step, seqPos, firstDiff(got, model[seqPos:seqPos+m]))
				}
				seqPos += m
			}
			log = append(log, fmt.Sprintf("sequential reads to %d", seqPos))
		case 4, 5: // a hole search over a long range, as BLOCK_STATUS asks
			limit := min(size, off+int64(r.IntN(size)))
			got, err := v.e.SeekHoleBefore(v.meta, 1, off, limit)
			if err != nil {
				fail("SeekHoleBefore: %v", err)
			}
			want := off
			for want < limit && !holeAt(want) {
				want = (want/blk + 1) * blk
			}
			if want = min(want, limit); got != want {
				fail("step %d: SeekHoleBefore(%d, %d) = %d, want %d", step, off, limit, got, want)
			}
			log = append(log, fmt.Sprintf("seek hole %d..%d = %d", off, limit, got))
		default: // a random read
			if got := v.read(1, off, int(n)); !bytes.Equal(got, model[off:off+n]) {
				fail("step %d: read %d+%d differs at byte %d", step, off, n, firstDiff(got, model[off:off+n]))
			}
			log = append(log, fmt.Sprintf("read %d+%d", off, n))
		}
	}
	if v.e.windows != nil && v.e.counters.windowHits.Load() == 0 {
		t.Errorf("no read or seek was answered from a window")
	}
}

// The readahead's scan of the extents ahead of a sequential reader is
// kept as a window: exactly the whole extents overlapping its range (the
// reads then take their extents from it), while the readahead itself gets
// them clipped to the range, as Extents gives them. A window scanned
// across a commit that changed the file's extents is not kept.
func TestReadaheadKeepsExtentWindows(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "cdc:16K:32K:64K")})
	if v.e.windows == nil {
		t.Fatal("an engine without other writers keeps no windows")
	}
	data := testutil.RandBytes(rand.New(rand.NewPCG(5, 5)), 4<<20)
	v.write(1, 0, data)
	from, to := int64(1<<20+12345), int64(3<<20+777)
	got, err := v.e.readaheadExtents(v.meta, 1, from, to)
	testutil.Check(t, err)
	want, err := Extents(v.meta, 1, from, to)
	testutil.Check(t, err)
	if !slices.Equal(got, want) {
		t.Fatalf("readahead extents of [%d, %d): %d pieces, want Extents' %d", from, to, len(got), len(want))
	}
	var whole []Piece
	testutil.Check(t, scanExtents(v.meta, 1, from, to, func(p Piece) error { whole = append(whole, p); return nil }))
	kept, ok := v.e.windows.get(1, from, to)
	if !ok || !slices.Equal(kept, whole) {
		t.Fatalf("window of [%d, %d): %v, %d pieces, want the %d whole extents", from, to, ok, len(kept), len(whole))
	}
	if inner, ok := v.e.windows.get(1, from+100000, to-100000); !ok || len(inner) == 0 || inner[0].Off > from+100000 {
		t.Fatalf("a read inside the window does not find its extents there: %v, %d pieces", ok, len(inner))
	}
	if _, ok := v.e.windows.get(1, from-1, to); ok {
		t.Fatal("a window answered for a range it does not cover")
	}
	for i := range 4096 {
		data[2<<20+i] ^= 0xff
	}
	v.write(1, 2<<20, data[2<<20:2<<20+4096])
	if _, ok := v.e.windows.get(1, from, to); ok {
		t.Fatal("the window outlived a write into its range")
	}
	if got := v.read(1, from, int(to-from)); !bytes.Equal(got, data[from:to]) {
		t.Fatalf("read after the write differs at byte %d", firstDiff(got, data[from:to]))
	}
	// A scan that a commit overtook: its window must not be kept.
	at := v.e.windows.snapshot()
	v.write(1, 0, data[:4096])
	v.e.windows.put(1, 0, 1<<20, whole, at)
	if _, ok := v.e.windows.get(1, 0, 1<<20); ok {
		t.Fatal("a window scanned before a commit was kept after it")
	}
}

// An engine whose store other processes commit to keeps no windows: their
// changes would not drop them.
func TestNoExtentWindowsWithOtherWriters(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), OtherWriters: true})
	if v.e.windows != nil {
		t.Fatal("an engine with other writers keeps extent windows")
	}
	data := testutil.RandBytes(rand.New(rand.NewPCG(6, 6)), 1<<20)
	v.write(1, 0, data)
	for off := 0; off < len(data); off += 64 << 10 {
		if got := v.read(1, int64(off), 64<<10); !bytes.Equal(got, data[off:off+64<<10]) {
			t.Fatalf("read at %d differs", off)
		}
	}
	if _, err := v.e.readaheadExtents(v.meta, 1, 0, 1<<20); err != nil {
		t.Fatal(err)
	}
	if n := v.e.counters.windowHits.Load(); n != 0 {
		t.Fatalf("%d reads were answered from windows", n)
	}
}
