package s3store

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// livePack puts chunks until a pack is sealed and uploaded, and returns
// the chunks of that first pack.
func livePack(t *testing.T, s *Store, r *rand.Rand) ([]blob.Loc, [][]byte) {
	t.Helper()
	locs, data := putSynced(t, s, r, 40) // about 800 KiB: several 256 KiB packs
	var l []blob.Loc
	var d [][]byte
	for i, loc := range locs {
		if loc.Segment == locs[0].Segment {
			l, d = append(l, loc), append(d, data[i])
		}
	}
	return l, d
}

// A pack with most chunks freed is sparse; ReadSegment returns its bytes;
// Retire keeps it readable until its grace has passed, while a Free that
// leaves it all dead does not delete it early; then DeleteRetired deletes
// it, and DeadBytes counts it no more.
func TestRetireWaitsForGrace(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "retire")
	cfg.RetireGrace = 300 * time.Millisecond
	s := mustOpen(t, cfg)
	defer s.Close()
	r := rand.New(rand.NewPCG(2, 2))
	locs, data := livePack(t, s, r)
	num := locs[0].Segment
	if len(locs) < 3 {
		t.Fatalf("pack %d holds %d chunks; want at least 3", num, len(locs))
	}
	for _, loc := range locs[1:] {
		if err := s.Free(loc); err != nil {
			t.Fatal(err)
		}
	}
	sparse := s.SparseSegments(0.5)
	if len(sparse) == 0 || sparse[0].Num != num || sparse[0].Live != blob.LiveSpan(locs[0]).End-blob.LiveSpan(locs[0]).Start {
		t.Fatalf("SparseSegments(0.5) = %+v; want pack %d first with the first chunk's span live", sparse, num)
	}
	if dead := s.DeadBytes(); dead <= 0 {
		t.Fatalf("DeadBytes = %d after freeing chunks of a sealed pack", dead)
	}
	whole, err := s.ReadSegment(num)
	if err != nil {
		t.Fatal(err)
	}
	if got := whole[locs[0].Offset : locs[0].Offset+uint64(locs[0].Length)]; !bytes.Equal(got, data[0]) {
		t.Fatal("ReadSegment: the live chunk's bytes differ")
	}

	if err := s.Retire(num); err != nil {
		t.Fatal(err)
	}
	if err := s.Free(locs[0]); err != nil { // all dead now: must still wait
		t.Fatal(err)
	}
	if n, _, err := s.DeleteRetired(); err != nil || n != 0 {
		t.Fatalf("DeleteRetired before the grace = %d, %v; want 0", n, err)
	}
	for _, sp := range s.SparseSegments(1) {
		if sp.Num == num {
			t.Fatal("a retired pack is listed as sparse")
		}
	}
	if got, err := s.Read(locs[0], nil); err != nil || !bytes.Equal(got, data[0]) {
		t.Fatalf("read of a retired pack within its grace: %v", err)
	}
	time.Sleep(cfg.RetireGrace)
	n, bytesGone, err := s.DeleteRetired()
	if err != nil || n != 1 || bytesGone != int64(len(whole)) {
		t.Fatalf("DeleteRetired after the grace = %d, %d, %v; want 1, %d", n, bytesGone, err, len(whole))
	}
	if _, err := s.ReadSegment(num); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadSegment of a deleted pack: %v; want ErrNotExist", err)
	}
	listed, err := s.objs.list()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed[num]; ok {
		t.Fatalf("pack %d still in the bucket", num)
	}
}

// A pack the ledger says is all dead at open (retired by a store that
// closed before the grace passed) is deleted once the grace has passed.
func TestRetiredPackDeletedAfterReopen(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "reopen")
	cfg.RetireGrace = 200 * time.Millisecond
	s := mustOpen(t, cfg)
	r := rand.New(rand.NewPCG(3, 3))
	locs, _ := livePack(t, s, r)
	num := locs[0].Segment
	if err := s.Retire(num); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // saves the ledger
		t.Fatal(err)
	}
	s = mustOpen(t, cfg)
	defer s.Close()
	if n, _, _ := s.DeleteRetired(); n != 0 {
		t.Fatal("deleted at once after reopening; the grace restarts at open")
	}
	time.Sleep(cfg.RetireGrace)
	if n, _, err := s.DeleteRetired(); err != nil || n != 1 {
		t.Fatalf("DeleteRetired = %d, %v; want 1", n, err)
	}
}

// Relist finds packs another store wrote after this one listed; a sweep
// can then Reclaim them.
func TestRelistFindsOtherPacks(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "relist")
	alloc := NewLocalAllocator(t.TempDir())
	cfg.Allocator = alloc
	a := mustOpen(t, cfg)
	defer a.Close()
	cfgB := cfg
	cfgB.Dir = t.TempDir()
	b := mustOpen(t, cfgB)
	r := rand.New(rand.NewPCG(4, 4))
	locs, _ := livePack(t, b, r)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if nums, err := a.Segments(); err != nil || slices.Contains(nums, locs[0].Segment) {
		t.Fatalf("a lists b's pack before relisting (%v)", err)
	}
	if err := a.Relist(); err != nil {
		t.Fatal(err)
	}
	if nums, err := a.Segments(); err != nil || !slices.Contains(nums, locs[0].Segment) {
		t.Fatalf("after Relist, a does not list b's pack (%v)", err)
	}
}

// SegmentSize (what fsck asks) finds a pack another store wrote after
// this one listed, without a relisting, and a missing pack is missing.
func TestSegmentSizeOfUnlistedPack(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "unlisted")
	cfg.Allocator = NewLocalAllocator(t.TempDir())
	a := mustOpen(t, cfg)
	defer a.Close()
	cfgB := cfg
	cfgB.Dir = t.TempDir()
	b := mustOpen(t, cfgB)
	locs, _ := livePack(t, b, rand.New(rand.NewPCG(5, 5)))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := a.SegmentSize(locs[0].Segment); err != nil || n < int64(locs[0].Offset)+int64(locs[0].Length) {
		t.Fatalf("SegmentSize of b's pack: %d, %v", n, err)
	}
	if _, err := a.SegmentSize(locs[0].Segment + 1000); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("SegmentSize of a pack nobody wrote: %v, want ErrNotExist", err)
	}
}
