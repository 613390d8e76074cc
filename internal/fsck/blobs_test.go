package fsck_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/voltest"
	"github.com/doppelfs/doppel/internal/volume"
)

// segmentFiles skips tests that damage segment files when the volume's
// chunk data is in S3 (DOPPEL_TEST_META=postgres+s3): there are none.
func (e *env) segmentFiles() {
	if voltest.S3() {
		e.t.Skip("damages segment files; the volume's chunk data is in S3")
	}
}

// segment returns the file of the segment holding the first chunk of p,
// and that chunk's offset in it.
func (e *env) segment(p string) (string, int64) {
	e.segmentFiles()
	_, c := e.chunkOf(p)
	return filepath.Join(e.dir, "chunks", fmt.Sprintf("seg-%08x", c.Segment)), int64(c.Offset)
}

func TestFlippedByteNeedsVerifyData(t *testing.T) {
	e := newEnv(t, volume.InitOptions{})
	seg, off := e.segment("/solo")
	f := testutil.Must(os.OpenFile(seg, os.O_RDWR, 0))
	defer f.Close()
	b := make([]byte, 1)
	testutil.Must(f.ReadAt(b, off+100))
	b[0] ^= 0x20
	testutil.Must(f.WriteAt(b, off+100))

	wantOnlyWithVerifyData(t, e, fsck.KindBadHash, "/solo")
}

// wantOnlyWithVerifyData fails unless a check of e finds nothing without
// --verify-data and exactly one problem, of kind at path, with it.
func wantOnlyWithVerifyData(t *testing.T, e *env, kind, path string) {
	t.Helper()
	if r := e.check(false); len(r.Problems) != 0 {
		t.Fatalf("without --verify-data the damage is invisible, yet: %v", r.Kinds())
	}
	r := e.check(true)
	want(t, r, kind, path)
	if len(r.Problems) != 1 {
		t.Fatalf("want exactly one problem, got %v", r.Problems)
	}
}

// TestWrongCheckNeedsVerifyData: a chunk record whose read check
// disagrees with intact bytes is found by --verify-data only. (Reads fall
// back to the hash: content's TestReadsVerifyChecks.)
func TestWrongCheckNeedsVerifyData(t *testing.T) {
	e := newEnv(t, volume.InitOptions{})
	h, c := e.chunkOf("/solo")
	if !c.HasCheck {
		t.Fatalf("chunk record %+v has no check", c)
	}
	c.Check ^= 1
	e.commit(schema.ChunkKey(h), c.Encode())
	wantOnlyWithVerifyData(t, e, fsck.KindBadCheck, "")
}

func TestGarbageAfterLastChunkIsReclaimable(t *testing.T) {
	e := newEnv(t, volume.InitOptions{})
	e.segmentFiles()
	// The segment must end with a live chunk: on shared volumes the last
	// chunks newEnv writes into it may be freed ones (its small chunks
	// stay inline in their records), whose punched tail is no chunk's.
	e.write("/last", testutil.SeededBytes(10, 64<<10))
	nums := testutil.Must(e.v.Blobs.Segments())
	seg := filepath.Join(e.dir, "chunks", fmt.Sprintf("seg-%08x", nums[len(nums)-1]))
	f := testutil.Must(os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0))
	size := testutil.Must(f.Stat()).Size()
	testutil.Must(f.Write(testutil.SeededBytes(9, 10000)))
	testutil.Check(t, f.Close())
	roundUp := func(n int64) int64 { return (n + 4095) &^ 4095 }

	r := e.check(true)
	want(t, r, fsck.KindOrphanSpace, "")
	// The block holding the last chunk's end counts as the chunk's.
	wantBytes := roundUp(size+10000) - roundUp(size)
	if !r.Clean() || len(r.Problems) != 1 || r.ReclaimableBytes != wantBytes || r.Problems[0].Severity != fsck.SeverityReclaimable {
		t.Fatalf("want only reclaimable space of %d bytes, got %+v", wantBytes, r)
	}
}

func TestTruncatedSegment(t *testing.T) {
	e := newEnv(t, volume.InitOptions{})
	seg, off := e.segment("/solo")
	testutil.Check(t, os.Truncate(seg, off+100))
	for _, verify := range []bool{false, true} {
		r := e.check(verify)
		want(t, r, fsck.KindShortChunk, "/solo")
		if r.Clean() {
			t.Fatal("a truncated segment counts as clean")
		}
	}
}

func TestMissingSegment(t *testing.T) {
	e := newEnv(t, volume.InitOptions{})
	seg, _ := e.segment("/a")
	testutil.Check(t, os.Remove(seg))
	r := e.check(true)
	for _, p := range []string{"/a", "/d/b", "/d/copy"} {
		want(t, r, fsck.KindMissingSegment, p)
	}
}
