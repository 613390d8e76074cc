package storetest

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/testutil"
)

// Closing keeps what was put; a closed store refuses work; a reopened one
// reads it all and writes only to segments after the old ones.
func testReopen(t *testing.T, open Opener) {
	dir := t.TempDir()
	s := open(t, dir)
	r := rand.New(rand.NewPCG(5, 6))
	a, b := testutil.RandBytes(r, 5000), testutil.RandBytes(r, 70000)
	la, lb := Put(t, s, a), Put(t, s, b)
	must(t, s.Close())
	if err := s.Close(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("second Close: %v, want os.ErrClosed", err)
	}
	if _, err := s.Put(a); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Put after Close: %v, want os.ErrClosed", err)
	}

	s = open(t, dir)
	defer s.Close()
	CheckRead(t, s, la, a)
	CheckRead(t, s, lb, b)
	if start := s.SessionStart(); start <= max(la.Segment, lb.Segment) {
		t.Fatalf("SessionStart %d after reopen, want above the old segments %d and %d", start, la.Segment, lb.Segment)
	}
	lc := Put(t, s, a)
	if lc.Segment < s.SessionStart() {
		t.Fatalf("put after reopen at %+v, below SessionStart %d", lc, s.SessionStart())
	}
	CheckRead(t, s, lc, a)
}

// Freeing chunks leaves the others readable and never grows the usage.
func testFreeKeepsOthers(t *testing.T, open Opener) {
	s := fresh(t, open)
	r := rand.New(rand.NewPCG(1, 2))
	var locs []blob.Loc
	var data [][]byte
	for range 40 {
		d := testutil.RandBytes(r, 1+r.IntN(64<<10))
		data, locs = append(data, d), append(locs, Put(t, s, d))
	}
	must(t, s.Sync())
	before, _, err := s.Usage()
	must(t, err)
	for i, loc := range locs {
		if i%4 != 0 {
			if err := s.Free(loc); err != nil && !errors.Is(err, errors.ErrUnsupported) {
				t.Fatal(err)
			}
		}
	}
	must(t, s.Sync())
	after, _, err := s.Usage()
	must(t, err)
	if after > before {
		t.Errorf("usage grew from %d to %d bytes by freeing", before, after)
	}
	for i, loc := range locs {
		if i%4 == 0 {
			CheckRead(t, s, loc, data[i])
		}
	}
}

// Freeing every chunk of a sealed segment removes it: it is no longer
// listed and the usage falls; the chunks of other segments stay readable.
// (Segment files are deleted once no data is left, pack objects once all
// their spans are dead.)
func testFreeAllDropsSegment(t *testing.T, open Opener) {
	s := fresh(t, open)
	r := rand.New(rand.NewPCG(11, 12))
	var locs []blob.Loc
	var data [][]byte
	for len(locs) == 0 || locs[len(locs)-1].Segment == locs[0].Segment {
		d := testutil.RandBytes(r, 1+r.IntN(100<<10))
		data, locs = append(data, d), append(locs, Put(t, s, d))
	}
	must(t, s.Sync())
	before, _, err := s.Usage()
	must(t, err)
	first := locs[0].Segment
	for _, loc := range locs {
		if loc.Segment == first {
			must(t, s.Free(loc))
		}
	}
	must(t, s.Sync())
	segs, err := s.Segments()
	must(t, err)
	if slices.Contains(segs, first) {
		t.Errorf("segment %d still listed after all its chunks were freed: %v", first, segs)
	}
	after, _, err := s.Usage()
	must(t, err)
	if after >= before {
		t.Errorf("usage %d bytes after freeing a whole segment, was %d", after, before)
	}
	last := len(locs) - 1
	CheckRead(t, s, locs[last], data[last])
}

// Freeing every chunk of a segment but one keeps that one, however small
// the chunks and however close they lie (back to back in packs without
// padding, where a freed span rounded to 4 KiB would cover it): its
// segment stays listed and it reads back, also after a reopen.
func testFreeAroundOne(t *testing.T, open Opener) {
	dir := t.TempDir()
	s := open(t, dir)
	r := rand.New(rand.NewPCG(13, 14))
	batch := make([][]byte, 64)
	for i := range batch {
		batch[i] = testutil.RandBytes(r, 1+r.IntN(3000))
	}
	keep := len(batch) / 2
	batch[keep] = batch[keep][:10] // within the 4 KiB its neighbour ends in
	locs, err := s.PutMany(batch)
	must(t, err)
	must(t, s.Sync())
	seg := locs[keep].Segment
	for i, loc := range locs {
		if i != keep {
			must(t, s.Free(loc))
		}
	}
	must(t, s.Sync())
	check := func(when string) {
		t.Helper()
		segs, err := s.Segments()
		must(t, err)
		if !slices.Contains(segs, seg) {
			t.Fatalf("%s: segment %d gone while chunk %+v in it is live", when, seg, locs[keep])
		}
		CheckRead(t, s, locs[keep], batch[keep])
	}
	check("after the frees")
	must(t, s.Close())
	s = open(t, dir)
	defer s.Close()
	check("after a reopen")
}

// Reclaim of an earlier session's segment keeps the live spans readable
// and refuses segments of the current session.
func testReclaim(t *testing.T, open Opener) {
	dir := t.TempDir()
	s := open(t, dir)
	r := rand.New(rand.NewPCG(3, 4))
	var locs []blob.Loc
	var data [][]byte
	for range 12 {
		d := testutil.RandBytes(r, 1+r.IntN(100<<10))
		data, locs = append(data, d), append(locs, Put(t, s, d))
	}
	must(t, s.Sync())
	must(t, s.Close())
	s = open(t, dir)
	defer s.Close()
	seg := locs[0].Segment
	var live []blob.Span
	for i, loc := range locs {
		if loc.Segment == seg && i%2 == 0 {
			live = append(live, blob.SpanAt(loc, blob.AlignmentOf(s)))
		}
	}
	if _, err := s.Reclaim(seg, live); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Reclaim(%d): %v", seg, err)
	}
	for i, loc := range locs {
		if loc.Segment != seg || i%2 == 0 {
			CheckRead(t, s, loc, data[i])
		}
	}
	cur := Put(t, s, []byte("this session"))
	if _, err := s.Reclaim(cur.Segment, nil); err == nil {
		t.Errorf("Reclaim of segment %d of this session succeeded", cur.Segment)
	}
	CheckRead(t, s, cur, []byte("this session"))
}

// Prefetch and Forget are hints: bad and freed locations neither fail nor
// change what reads return.
func testHints(t *testing.T, open Opener) {
	s := fresh(t, open)
	r := rand.New(rand.NewPCG(9, 9))
	a, b := testutil.RandBytes(r, 3*blob.Align), testutil.RandBytes(r, 100)
	la, lb := Put(t, s, a), Put(t, s, b)
	freed := Put(t, s, testutil.RandBytes(r, 5000))
	if err := s.Free(freed); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		t.Fatal(err)
	}
	hints := []blob.Loc{la, lb, freed, {Segment: 99999, Length: 10}, {Segment: la.Segment, Offset: 1 << 40, Length: 10}}
	s.Prefetch(hints)
	s.Forget(hints)
	CheckRead(t, s, la, a)
	CheckRead(t, s, lb, b)
}

// Puts, reads and frees from several goroutines, with syncs between, so
// that sealing and freeing race with I/O.
func testConcurrentChurn(t *testing.T, open Opener) {
	s := fresh(t, open)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 99))
			type item struct {
				loc  blob.Loc
				data []byte
			}
			var live []item
			for i := range 200 {
				data := testutil.RandBytes(r, 1+r.IntN(20000))
				loc, err := s.Put(data)
				if err != nil {
					t.Error(err)
					return
				}
				live = append(live, item{loc, data})
				if i%50 == 0 {
					if err := s.Sync(); err != nil {
						t.Error(err)
						return
					}
				}
				if len(live) > 4 {
					k := r.IntN(len(live))
					it := live[k]
					got, err := s.Read(it.loc, nil)
					if err != nil || !bytes.Equal(got, it.data) {
						t.Errorf("read %+v: %v", it.loc, err)
						return
					}
					if err := s.Free(it.loc); err != nil && !errors.Is(err, errors.ErrUnsupported) {
						t.Error(err)
						return
					}
					live = slices.Delete(live, k, k+1)
				}
			}
			for _, it := range live {
				if got, err := s.Read(it.loc, nil); err != nil || !bytes.Equal(got, it.data) {
					t.Errorf("final read %+v: %v", it.loc, err)
					return
				}
			}
		})
	}
	wg.Wait()
	must(t, s.Sync())
}
