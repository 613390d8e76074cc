package content

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestReadRunsOfSmallChunks: a file of fixed 4 KiB chunks written in
// order is read back with coalesced blob reads (readPieces); every range,
// aligned or not, across holes and across the two writes' runs, reads its
// bytes, and damage to one chunk in the middle of a run is reported, not
// returned as data, while its neighbours still read.
func TestReadRunsOfSmallChunks(t *testing.T) {
	needSegmentFiles(t, "damages segment files; the chunk data is in S3")
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), VerifyReads: true})
	r := rand.New(rand.NewPCG(7, 8))
	want := make([]byte, 1<<20)
	copy(want, testutil.RandBytes(r, 600<<10))
	copy(want[700<<10:], testutil.RandBytes(r, 324<<10)) // a hole before it
	v.write(1, 0, want[:600<<10])
	v.write(1, 700<<10, want[700<<10:])
	if err := v.e.Sync(); err != nil {
		t.Fatal(err)
	}
	v.reopen() // nothing cached: reads go to the blob store
	for _, rg := range [][2]int{{0, 1 << 20}, {4096, 256 << 10}, {123, 777 << 10}, {590 << 10, 200 << 10}, {1<<20 - 5000, 5000}} {
		if got := v.read(1, int64(rg[0]), rg[1]); !bytes.Equal(got, want[rg[0]:rg[0]+rg[1]]) {
			t.Fatalf("read of %d bytes at %d differs at %d", rg[1], rg[0], firstDiff(got, want[rg[0]:rg[0]+rg[1]]))
		}
	}

	exts, err := Extents(v.meta, 1, 300<<10, 300<<10+1)
	if err != nil || len(exts) != 1 {
		t.Fatalf("Extents: %v, %v", exts, err)
	}
	v.flipByte(v.allChunks()[exts[0].Hash], 100)
	v.reopen()
	if err := v.e.ReadAt(1, 0, make([]byte, 1<<20)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read over a damaged chunk: err = %v, want ErrCorrupt", err)
	}
	if got := v.read(1, 0, 300<<10); !bytes.Equal(got, want[:300<<10]) {
		t.Error("chunks before the damaged one read wrong")
	}
	if got := v.read(1, 304<<10, 720<<10); !bytes.Equal(got, want[304<<10:]) {
		t.Error("chunks after the damaged one read wrong")
	}
}
