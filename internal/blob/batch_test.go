package blob

import (
	"errors"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestPutMany: a batch lands like a series of Puts (aligned, readable,
// spread over segments when one fills), and mixes with single Puts.
func TestPutMany(t *testing.T) { inBothWriteModes(t, testPutMany) }

func testPutMany(t *testing.T) {
	d := openT(t, t.TempDir(), Options{SegmentSize: 64 * Align})
	defer d.Close()
	r := rand.New(rand.NewPCG(20, 21))
	var all [][]byte
	var locs []Loc
	for round := range 6 {
		var batch [][]byte
		for range 1 + r.IntN(40) {
			batch = append(batch, testutil.RandBytes(r, 1+r.IntN(5*Align)))
		}
		got, err := d.PutMany(batch)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(batch) {
			t.Fatalf("round %d: %d locations for %d chunks", round, len(got), len(batch))
		}
		all, locs = append(all, batch...), append(locs, got...)
		single := testutil.RandBytes(r, 1+r.IntN(Align))
		all, locs = append(all, single), append(locs, put(t, d, single))
	}
	segs := map[uint32]bool{}
	for i, loc := range locs {
		if loc.Offset%Align != 0 {
			t.Fatalf("chunk %d at unaligned offset %d", i, loc.Offset)
		}
		segs[loc.Segment] = true
		checkRead(t, d, loc, all[i])
	}
	if len(segs) < 2 {
		t.Fatalf("batches filled %d segment(s); the test wants them to spill over", len(segs))
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	for i, loc := range locs {
		checkRead(t, d, loc, all[i])
	}
}

// TestPutManyWriteFailure: a batch whose write fails keeps nothing, not
// even the parts of other segments it had written. (A direct write fails
// in the background; PutMany's Wait reports it.)
func TestPutManyWriteFailure(t *testing.T) { inBothWriteModes(t, testPutManyWriteFailure) }

func testPutManyWriteFailure(t *testing.T) {
	const chunk = 16 * Align // segments of 8 chunks: writes large enough to go direct
	d := openT(t, t.TempDir(), Options{SegmentSize: 8 * chunk})
	defer d.Close()
	r := rand.New(rand.NewPCG(22, 23))
	if err := d.Free(put(t, d, []byte("probe"))); err != nil {
		skipNoPunch(t, err)
		t.Fatal(err)
	}
	a := testutil.RandBytes(r, 3*Align)
	la := put(t, d, a)
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	before, _, err := d.Usage()
	if err != nil {
		t.Fatal(err)
	}

	orig := writevAt
	var calls atomic.Int32
	writevAt = func(f *os.File, iovs [][]byte, off int64) (int, error) {
		if calls.Add(1) == 1 {
			return orig(f, iovs, off) // the first segment's part succeeds
		}
		n, _ := orig(f, iovs[:1], off) // a partial write, then the disk is full
		return n, syscall.ENOSPC
	}
	var batch [][]byte
	for range 20 {
		batch = append(batch, testutil.RandBytes(r, chunk))
	}
	_, err = d.PutMany(batch) // 20 chunks: more than one segment
	writevAt = orig
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("PutMany: %v, want ENOSPC (after %d writes)", err, calls.Load())
	}
	if calls.Load() < 2 {
		t.Fatalf("the batch was written in %d write(s); the test needs it to span segments", calls.Load())
	}
	checkRead(t, d, la, a)
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	after, _, err := d.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if after > before {
		t.Fatalf("allocated %d bytes after the failed batch, %d before: its writes were not punched out", after, before)
	}
}

// TestPrefetch: a hint over live, freed and impossible locations neither
// fails nor changes what reads return.
// TestPrefetch: the hints, WILLNEED and DONTNEED, take bad and freed
// locations and leave every byte readable.
func TestPrefetch(t *testing.T) {
	d := openT(t, t.TempDir(), Options{SegmentSize: 8 * Align})
	defer d.Close()
	r := rand.New(rand.NewPCG(24, 25))
	var locs []Loc
	var all [][]byte
	for range 12 {
		p := testutil.RandBytes(r, 1+r.IntN(3*Align))
		all, locs = append(all, p), append(locs, put(t, d, p))
	}
	if err := d.Free(locs[3]); err != nil {
		skipNoPunch(t, err)
		t.Fatal(err)
	}
	bad := []Loc{{Segment: 99, Offset: 0, Length: 10}, {Segment: 0}}
	d.Prefetch(append(bad, locs...))
	for i, loc := range locs {
		if i != 3 {
			checkRead(t, d, loc, all[i])
		}
	}
	d.Forget(append(bad, locs...))
	for i, loc := range locs {
		if i != 3 {
			checkRead(t, d, loc, all[i])
		}
	}
}

// TestWriteBehind: once a segment holds writeBehindBytes of written data
// whose writeback was not started, PutMany starts it (and reads still see
// every byte).
func TestWriteBehind(t *testing.T) {
	d := openT(t, t.TempDir(), Options{BufferedWrites: true})
	defer d.Close()
	r := rand.New(rand.NewPCG(26, 27))
	var all [][]byte
	for range (writeBehindBytes + 2<<20) / (64 << 10) {
		all = append(all, testutil.RandBytes(r, 64<<10))
	}
	locs, err := d.PutMany(all)
	if err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	kicked := d.active.kicked
	d.mu.Unlock()
	if kicked < writeBehindBytes {
		t.Fatalf("writeback started up to %d after %d bytes were written", kicked, len(all)*64<<10)
	}
	for i, loc := range locs {
		checkRead(t, d, loc, all[i])
	}
}
