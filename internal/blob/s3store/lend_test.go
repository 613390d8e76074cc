package s3store

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// cutRun returns a run of n random bytes cut into chunks of up to max
// bytes, as slices of the run's array.
func cutRun(r *rand.Rand, n, max int) ([]byte, [][]byte) {
	run := testutil.RandBytes(r, n)
	var chunks [][]byte
	for off := 0; off < n; {
		c := min(n-off, 1+r.IntN(max))
		chunks = append(chunks, run[off:off+c:off+c])
		off += c
	}
	return run, chunks
}

// A run lent to a store of packs without padding becomes a pack of its
// own that holds exactly the run, uploaded from the run's memory: the
// store gives the memory back once, only after the upload, also when the
// upload had to wait for the server to come back.
func TestLentRunIsItsPack(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "lent")
	cfg.Unpadded = true
	s := mustOpen(t, cfg)
	r := rand.New(rand.NewPCG(21, 22))
	run, chunks := cutRun(r, int(cfg.PackSize), 20<<10)
	want := make([][]byte, len(chunks))
	for i, c := range chunks {
		want[i] = append([]byte(nil), c...)
	}

	var released atomic.Int32
	srv.Stop()
	w, err := s.StartPutManyLent(chunks, run, func() { released.Add(1) })
	testutil.Check(t, err)
	checkAll(t, s, w.Locs, chunks) // from the run's memory
	if err := s.SyncLocs(w.Locs); err == nil {
		t.Fatal("SyncLocs returned nil with the server stopped")
	}
	if n := released.Load(); n != 0 {
		t.Fatalf("the run was given back %d times before its upload", n)
	}
	srv.Restart(t)
	testutil.Check(t, s.SyncLocs(w.Locs))
	if n := released.Load(); n != 1 {
		t.Fatalf("the run was given back %d times after its upload, want once", n)
	}
	for i, l := range w.Locs {
		if l.Segment != w.Locs[0].Segment || i > 0 && l.Offset != w.Locs[i-1].Offset+uint64(w.Locs[i-1].Length) {
			t.Fatalf("chunk %d at %+v: not right after the one before in one pack", i, l)
		}
	}
	clear(run) // the caller may reuse it now
	checkAll(t, s, w.Locs, want)
	if got := cloneAll(t, cfg, w.Locs); !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatal("the object store holds other bytes than the run's")
	}
	size, err := s.SegmentSize(w.Locs[0].Segment)
	testutil.Check(t, err)
	if size != int64(len(run)) {
		t.Fatalf("the pack holds %d bytes for a run of %d", size, len(run))
	}
	testutil.Check(t, s.Close())
}

// cloneAll reads locs from a fresh store on cfg's bucket without a
// cache: what the object store holds.
func cloneAll(t *testing.T, cfg Config, locs []blob.Loc) [][]byte {
	t.Helper()
	cfg.Dir, cfg.CacheBytes = t.TempDir(), -1
	s := mustOpen(t, cfg)
	defer s.Close()
	var out [][]byte
	for _, l := range locs {
		b, err := s.Read(l, nil)
		testutil.Check(t, err)
		out = append(out, b)
	}
	return out
}

// Batches that cannot be a pack as they lie are copied, and the memory
// is given back at once: chunks not back to back, a batch under half a
// pack, chunks outside the backing array, a store with padded packs.
func TestLentBatchCopiedWhenItCannotBeAPack(t *testing.T) {
	srv := s3test.Start(t)
	r := rand.New(rand.NewPCG(23, 24))
	for _, tc := range []struct {
		name     string
		unpadded bool
		batch    func() ([]byte, [][]byte)
	}{
		{"gap", true, func() ([]byte, [][]byte) {
			run, chunks := cutRun(r, 256<<10, 20<<10)
			return run, append(chunks[:3:3], chunks[4:]...)
		}},
		{"small", true, func() ([]byte, [][]byte) { return cutRun(r, 64<<10, 20<<10) }},
		{"outside", true, func() ([]byte, [][]byte) {
			run, chunks := cutRun(r, 256<<10, 20<<10)
			return run[:0:0], chunks
		}},
		{"padded", false, func() ([]byte, [][]byte) { return cutRun(r, 256<<10, 20<<10) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, srv, "copied-"+tc.name)
			cfg.Unpadded = tc.unpadded
			s := mustOpen(t, cfg)
			defer s.Close()
			run, chunks := tc.batch()
			want := make([][]byte, len(chunks))
			for i, c := range chunks {
				want[i] = append([]byte(nil), c...)
			}
			released := 0
			w, err := s.StartPutManyLent(chunks, run, func() { released++ })
			testutil.Check(t, err)
			if released != 1 {
				t.Fatalf("given back %d times by a copying put, want once at once", released)
			}
			clear(run)
			for _, c := range chunks {
				clear(c)
			}
			checkAll(t, s, w.Locs, want)
			testutil.Check(t, s.Sync())
			checkAll(t, s, w.Locs, want)
		})
	}
}
