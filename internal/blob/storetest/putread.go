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

// Puts from many goroutines land at sane, non-overlapping locations and
// read back, before and after Sync.
func testRoundTripConcurrent(t *testing.T, open Opener) {
	s := fresh(t, open)
	type item struct {
		loc  blob.Loc
		data []byte
	}
	const workers, perWorker = 8, 24
	items := make([][]item, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range perWorker {
				data := testutil.RandBytes(r, 1+r.IntN(256<<10))
				loc, err := s.Put(data)
				if err != nil {
					t.Error(err)
					return
				}
				if loc.Segment == 0 || int64(loc.Offset)%blob.AlignmentOf(s) != 0 || int(loc.Length) != len(data) {
					t.Errorf("bad loc %+v for %d bytes", loc, len(data))
				}
				items[w] = append(items[w], item{loc, data})
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	type span struct {
		seg      uint32
		from, to uint64
	}
	var spans []span
	for _, its := range items {
		for _, it := range its {
			CheckRead(t, s, it.loc, it.data)
			spans = append(spans, span{it.loc.Segment, it.loc.Offset, it.loc.Offset + uint64(it.loc.Length)})
		}
	}
	must(t, s.Sync())
	for _, its := range items {
		for _, it := range its {
			CheckRead(t, s, it.loc, it.data)
		}
	}
	slices.SortFunc(spans, func(a, b span) int {
		if a.seg != b.seg {
			return int(a.seg) - int(b.seg)
		}
		return int(a.from) - int(b.from)
	})
	for i := 1; i < len(spans); i++ {
		if spans[i].seg == spans[i-1].seg && spans[i].from < spans[i-1].to {
			t.Fatalf("overlap: %+v %+v", spans[i-1], spans[i])
		}
	}
	if segs, err := s.Segments(); err != nil || len(segs) < 2 {
		t.Fatalf("segments %v, %v: want several", segs, err)
	}
}

func testEdgeSizes(t *testing.T, open Opener) {
	s := fresh(t, open)
	r := rand.New(rand.NewPCG(7, 7))
	big := testutil.RandBytes(r, 3<<20) // larger than a segment
	for _, data := range [][]byte{{}, {42}, testutil.RandBytes(r, blob.Align), testutil.RandBytes(r, blob.Align+1), big, {1, 2, 3}} {
		CheckRead(t, s, Put(t, s, data), data)
	}
	// A short buffer is replaced.
	loc := Put(t, s, big)
	if got, err := s.Read(loc, nil); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("read with nil buffer: %v", err)
	}
	bad := []blob.Loc{{Segment: 0, Length: 1}}
	if blob.AlignmentOf(s) > 1 { // else any offset can be a chunk's
		bad = append(bad, blob.Loc{Segment: loc.Segment, Offset: 1, Length: 1})
	}
	for _, bad := range bad {
		if _, err := s.Read(bad, nil); !errors.Is(err, blob.ErrCorrupt) {
			t.Fatalf("read %+v: %v, want ErrCorrupt", bad, err)
		}
	}
}

// PutMany and StartPutMany land like a series of Puts and mix with them.
func testPutMany(t *testing.T, open Opener) {
	s := fresh(t, open)
	r := rand.New(rand.NewPCG(20, 21))
	var all [][]byte
	var locs []blob.Loc
	for round := range 8 {
		var batch [][]byte
		for range 1 + r.IntN(40) {
			batch = append(batch, testutil.RandBytes(r, 1+r.IntN(5*blob.Align)))
		}
		var got []blob.Loc
		var err error
		if round%2 == 0 {
			got, err = s.PutMany(batch)
		} else {
			var w *blob.Writing
			if w, err = s.StartPutMany(batch); err == nil {
				got, err = w.Locs, w.Wait()
			}
		}
		must(t, err)
		if len(got) != len(batch) {
			t.Fatalf("round %d: %d locations for %d chunks", round, len(got), len(batch))
		}
		all, locs = append(all, batch...), append(locs, got...)
		single := testutil.RandBytes(r, 1+r.IntN(blob.Align))
		all, locs = append(all, single), append(locs, Put(t, s, single))
	}
	for i, loc := range locs {
		if int64(loc.Offset)%blob.AlignmentOf(s) != 0 {
			t.Fatalf("chunk %d at unaligned offset %d", i, loc.Offset)
		}
		CheckRead(t, s, loc, all[i])
	}
	must(t, s.Sync())
	for i, loc := range locs {
		CheckRead(t, s, loc, all[i])
	}
}

// A location no segment holds is an error wrapping os.ErrNotExist, never
// zeros.
func testReadMissing(t *testing.T, open Opener) {
	s := fresh(t, open)
	Put(t, s, []byte("something"))
	if _, err := s.Read(blob.Loc{Segment: 99999, Length: 1}, nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read of unknown segment: %v, want ErrNotExist", err)
	}
}
