package blob

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

func openT(t testing.TB, dir string, opt Options) *Dir {
	t.Helper()
	opt.BufferedWrites = opt.BufferedWrites || testBuffered
	d, err := OpenDir(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// testBuffered makes openT open stores with BufferedWrites.
var testBuffered bool

// inBothWriteModes runs test once with direct segment writes (where the
// host allows them) and once with buffered ones.
func inBothWriteModes(t *testing.T, test func(t *testing.T)) {
	for _, buffered := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "buffered"}[buffered], func(t *testing.T) {
			testBuffered = buffered
			defer func() { testBuffered = false }()
			test(t)
		})
	}
}

func put(t testing.TB, d *Dir, data []byte) Loc {
	t.Helper()
	loc, err := d.Put(data)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func checkRead(t testing.TB, d *Dir, loc Loc, want []byte) {
	t.Helper()
	got, err := d.Read(loc, make([]byte, len(want)+7))
	if err != nil {
		t.Fatalf("read %+v: %v", loc, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %+v: data differs", loc)
	}
}

// skipNoPunch skips the test when the file system under dir cannot punch holes.
func skipNoPunch(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("file system does not support punching holes: %v", err)
	}
}

func TestEdgeSizes(t *testing.T) { inBothWriteModes(t, testEdgeSizes) }

func testEdgeSizes(t *testing.T) {
	d := openT(t, t.TempDir(), Options{SegmentSize: 64 << 10})
	defer d.Close()
	r := rand.New(rand.NewPCG(7, 7))
	big := testutil.RandBytes(r, 200<<10) // larger than a segment: goes alone
	for _, data := range [][]byte{{}, {42}, testutil.RandBytes(r, Align), testutil.RandBytes(r, Align+1), big, {1, 2, 3}} {
		loc := put(t, d, data)
		checkRead(t, d, loc, data)
		if len(data) == len(big) && loc.Offset != 0 {
			t.Fatalf("oversized chunk at offset %d, want alone in a fresh segment", loc.Offset)
		}
	}
	// A short buffer is replaced.
	loc := put(t, d, big)
	got, err := d.Read(loc, nil)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("read with nil buffer: %v", err)
	}
	for _, bad := range []Loc{{Segment: 0}, {Segment: 1, Offset: 1}} {
		if _, err := d.Read(bad, nil); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("read %+v: %v, want ErrCorrupt", bad, err)
		}
	}
}

func TestFreePunchesHoles(t *testing.T) { inBothWriteModes(t, testFreePunchesHoles) }

func testFreePunchesHoles(t *testing.T) {
	d := openT(t, t.TempDir(), Options{})
	defer d.Close()
	r := rand.New(rand.NewPCG(1, 2))
	const chunk = 1 << 20
	var locs []Loc
	var keep []byte
	for i := range 64 {
		data := testutil.RandBytes(r, chunk-100) // leaves unwritten padding
		if i == 10 {
			keep = data
		}
		locs = append(locs, put(t, d, data))
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	before, n, err := d.Usage()
	if err != nil || n != 1 {
		t.Fatalf("usage: %d segments, %v", n, err)
	}
	if before < 60*chunk {
		t.Fatalf("allocated %d before free, want about 64 MiB", before)
	}
	for i, loc := range locs {
		if i == 10 {
			continue
		}
		if err := d.Free(loc); err != nil {
			skipNoPunch(t, err)
			t.Fatal(err)
		}
	}
	after, n, err := d.Usage()
	if err != nil || n != 1 {
		t.Fatalf("usage: %d segments, %v", n, err)
	}
	t.Logf("allocated %d -> %d bytes", before, after)
	if after > 2*chunk {
		t.Fatalf("allocated %d after freeing all but one chunk, want about %d", after, chunk)
	}
	checkRead(t, d, locs[10], keep)
	// Freeing the last chunk of the active segment keeps the segment.
	if err := d.Free(locs[10]); err != nil {
		t.Fatal(err)
	}
	if segs, _ := d.Segments(); len(segs) != 1 {
		t.Fatalf("active segment deleted: %v", segs)
	}
}

func TestSealedSegmentDeleted(t *testing.T) { inBothWriteModes(t, testSealedSegmentDeleted) }

func testSealedSegmentDeleted(t *testing.T) {
	dir := t.TempDir()
	opt := Options{SegmentSize: 1 << 20}
	d := openT(t, dir, opt)
	r := rand.New(rand.NewPCG(3, 4))
	bySeg := map[uint32][]Loc{}
	for range 10 {
		loc := put(t, d, testutil.RandBytes(r, 300<<10)) // three per segment
		bySeg[loc.Segment] = append(bySeg[loc.Segment], loc)
	}
	segs, _ := d.Segments()
	if !slices.Equal(segs, []uint32{1, 2, 3, 4}) {
		t.Fatalf("segments %v, want 1..4", segs)
	}
	for i, loc := range bySeg[1] {
		if err := d.Free(loc); err != nil {
			skipNoPunch(t, err)
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "seg-00000001")); (i == len(bySeg[1])-1) != errors.Is(err, os.ErrNotExist) {
			t.Fatalf("after %d frees: stat: %v", i+1, err)
		}
	}
	for _, loc := range bySeg[4] { // the active one stays
		if err := d.Free(loc); err != nil {
			t.Fatal(err)
		}
	}
	if segs, _ := d.Segments(); !slices.Equal(segs, []uint32{2, 3, 4}) {
		t.Fatalf("segments %v, want 2..4", segs)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read(bySeg[1][0], nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read from deleted segment: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopen deletes the empty former active segment; numbers go on.
	d = openT(t, dir, opt)
	if segs, _ := d.Segments(); !slices.Equal(segs, []uint32{2, 3}) {
		t.Fatalf("after reopen segments %v, want [2 3]", segs)
	}
	loc := put(t, d, []byte("x"))
	if loc.Segment != 5 {
		t.Fatalf("new segment %d, want 5", loc.Segment)
	}
	for _, l := range append(append(bySeg[2], bySeg[3]...), loc) {
		if err := d.Free(l); err != nil {
			t.Fatal(err)
		}
	}
	if segs, _ := d.Segments(); !slices.Equal(segs, []uint32{5}) {
		t.Fatalf("segments %v, want [5]", segs)
	}
	d.Close()

	d = openT(t, dir, opt)
	defer d.Close()
	if segs, _ := d.Segments(); len(segs) != 0 {
		t.Fatalf("segments %v, want none", segs)
	}
	if loc := put(t, d, []byte("y")); loc.Segment != 6 {
		t.Fatalf("new segment %d, want 6", loc.Segment)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "next")); err != nil || string(b) != "00000006\n" {
		t.Fatalf("next file %q, %v", b, err)
	}
}

func TestReopen(t *testing.T) { inBothWriteModes(t, testReopen) }

func testReopen(t *testing.T) {
	dir := t.TempDir()
	d := openT(t, dir, Options{})
	if _, err := OpenDir(dir, Options{}); err == nil {
		t.Fatal("second OpenDir of an open directory succeeded")
	}
	r := rand.New(rand.NewPCG(5, 6))
	a, b := testutil.RandBytes(r, 5000), testutil.RandBytes(r, 70000)
	la, lb := put(t, d, a), put(t, d, b)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := d.Put(a); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Put after Close: %v", err)
	}

	d = openT(t, dir, Options{})
	defer d.Close()
	checkRead(t, d, la, a)
	checkRead(t, d, lb, b)
	lc := put(t, d, a)
	if lc.Segment <= lb.Segment || lc.Offset != 0 {
		t.Fatalf("put after reopen at %+v, want a new segment after %d", lc, lb.Segment)
	}
	checkRead(t, d, lc, a)
}

func TestReadTruncatedOrMissing(t *testing.T) {
	dir := t.TempDir()
	d := openT(t, dir, Options{})
	r := rand.New(rand.NewPCG(8, 9))
	a, b := testutil.RandBytes(r, 10000), testutil.RandBytes(r, 10000)
	la, lb := put(t, d, a), put(t, d, b)
	d.Close()

	path := filepath.Join(dir, segName(la.Segment))
	if err := os.Truncate(path, int64(lb.Offset)+100); err != nil {
		t.Fatal(err)
	}
	d = openT(t, dir, Options{})
	checkRead(t, d, la, a)
	if _, err := d.Read(lb, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read of truncated chunk: %v, want ErrCorrupt", err)
	}
	if _, err := d.Read(Loc{Segment: 99, Length: 1}, nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read of unknown segment: %v, want ErrNotExist", err)
	}
	d.Close()

	// A file removed behind the store's back.
	d = openT(t, dir, Options{})
	defer d.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read(la, nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read of missing segment: %v, want ErrNotExist", err)
	}
}

func TestPutWriteFailure(t *testing.T) { inBothWriteModes(t, testPutWriteFailure) }

func testPutWriteFailure(t *testing.T) {
	d := openT(t, t.TempDir(), Options{})
	defer d.Close()
	r := rand.New(rand.NewPCG(10, 11))
	if err := d.Free(put(t, d, []byte("probe"))); err != nil {
		skipNoPunch(t, err)
		t.Fatal(err)
	}
	a := testutil.RandBytes(r, 3*Align)
	la := put(t, d, a)

	orig := writevAt
	writevAt = func(f *os.File, iovs [][]byte, off int64) (int, error) {
		n, _ := orig(f, [][]byte{iovs[0][:len(iovs[0])/2]}, off) // a partial write, then the disk is full
		return n, syscall.ENOSPC
	}
	_, err := d.Put(testutil.RandBytes(r, directMinBytes)) // large enough to go direct
	writevAt = orig
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("put: %v, want ENOSPC", err)
	}
	b := testutil.RandBytes(r, 5000)
	lb := put(t, d, b)
	checkRead(t, d, la, a)
	checkRead(t, d, lb, b)
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	alloc, _, err := d.Usage()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("allocated %d bytes", alloc)
	if alloc > 5*Align { // a (3 blocks) + b (2 blocks); the failed write was punched out
		t.Fatalf("allocated %d bytes, want %d: failed write not punched out", alloc, 5*Align)
	}
}

func TestManySegmentsCache(t *testing.T) {
	d := openT(t, t.TempDir(), Options{SegmentSize: Align})
	defer d.Close()
	var locs []Loc
	for i := range 3 * maxOpen {
		locs = append(locs, put(t, d, []byte{byte(i), byte(i >> 8)}))
	}
	for round := range 2 {
		for i, loc := range locs {
			checkRead(t, d, loc, []byte{byte(i), byte(i >> 8)})
		}
		d.mu.Lock()
		n := d.lru.Len()
		d.mu.Unlock()
		if n > maxOpen {
			t.Fatalf("round %d: %d cached handles, max %d", round, n, maxOpen)
		}
	}
	for _, loc := range locs[:len(locs)-1] {
		if err := d.Free(loc); err != nil {
			skipNoPunch(t, err)
			t.Fatal(err)
		}
	}
	if segs, _ := d.Segments(); len(segs) != 1 {
		t.Fatalf("%d segments left, want 1", len(segs))
	}
}

func openFds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open files: %v", err)
	}
	return len(ents)
}

func TestCloseReleasesFiles(t *testing.T) {
	dir := t.TempDir()
	before := openFds(t)
	d := openT(t, dir, Options{SegmentSize: 2 * Align})
	var locs []Loc
	for i := range 100 {
		locs = append(locs, put(t, d, []byte{byte(i)}))
	}
	for _, loc := range locs {
		if _, err := d.Read(loc, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, loc := range locs[:50] {
		if err := d.Free(loc); err != nil {
			skipNoPunch(t, err)
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if after := openFds(t); after != before {
		t.Fatalf("%d open files before, %d after Close", before, after)
	}
	d = openT(t, dir, Options{})
	defer d.Close()
	if segs, _ := d.Segments(); len(segs) != 25 {
		t.Fatalf("%d segments after reopen, want 25", len(segs))
	}
}
