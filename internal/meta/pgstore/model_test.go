package pgstore_test

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/meta"
)

var seedFlag = flag.Uint64("pgstore.seed", 0, "seed of the iterator model test (0: from the clock)")

// testIteratorModel walks iterators over ranges of many pages with random
// moves (First, Last, seeks, Next and Prev, changes of direction) through
// the store, a batch with point and range writes of its own, and a
// snapshot, and checks each position against a sorted model. The seed is
// printed; replay it with -pgstore.seed.
func testIteratorModel(t *testing.T, e *env) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -pgstore.seed=%d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, seed^0x9e37))
	s := e.open(t)
	key := func() string { return fmt.Sprintf("k%04d", r.IntN(4000)) }
	model := map[string]string{}
	b := s.NewBatch()
	for range 2500 {
		k := key()
		model[k] = "v" + k
		must(t, b.Set([]byte(k), []byte(model[k])))
	}
	must(t, b.Commit(false))
	b.Close()
	snap, snapModel := s.Snapshot(), maps.Clone(model)
	defer snap.Close()

	for round := range 6 {
		// A batch over the store: sets, deletes and range deletions.
		b := s.NewBatch()
		pending := maps.Clone(model)
		for range 200 {
			k := key()
			switch r.IntN(10) {
			case 0:
				hi := fmt.Sprintf("k%04d", r.IntN(4000))
				must(t, b.(meta.RangeDeleter).DeleteRange([]byte(k), []byte(hi)))
				for m := range pending {
					if m >= k && m < hi {
						delete(pending, m)
					}
				}
			case 1, 2, 3:
				must(t, b.Delete([]byte(k)))
				delete(pending, k)
			default:
				v := fmt.Sprintf("b%d.%s", round, k)
				must(t, b.Set([]byte(k), []byte(v)))
				pending[k] = v
			}
		}
		walk(t, r, b, pending, fmt.Sprintf("round %d batch", round))
		walk(t, r, s, model, fmt.Sprintf("round %d store", round))
		if r.IntN(3) > 0 {
			must(t, b.Commit(false))
			model = pending
		}
		b.Close()
		walk(t, r, snap, snapModel, fmt.Sprintf("round %d snapshot", round))
	}
	walk(t, r, s, model, "end store")
}

// walk makes random moves on an iterator over random bounds of rd and
// checks each against model.
func walk(t *testing.T, r *rand.Rand, rd meta.Reader, model map[string]string, where string) {
	t.Helper()
	for range 4 {
		lower, upper := fmt.Sprintf("k%04d", r.IntN(2000)), fmt.Sprintf("k%04d", 2000+r.IntN(2100))
		if r.IntN(4) == 0 {
			lower = ""
		}
		if r.IntN(4) == 0 {
			upper = ""
		}
		var keys []string
		for _, k := range slices.Sorted(maps.Keys(model)) {
			if k >= lower && (upper == "" || k < upper) {
				keys = append(keys, k)
			}
		}
		it, err := rd.NewIter(bytesOrNil(lower), bytesOrNil(upper))
		must(t, err)
		pos := -1 // index in keys; -1 or len(keys): invalid
		var ok bool
		var op string
		for step := range 400 {
			at := fmt.Sprintf("k%04d", r.IntN(4100))
			switch c := r.IntN(20); {
			case c == 0:
				op, ok, pos = "First", it.First(), 0
			case c == 1:
				op, ok, pos = "Last", it.Last(), len(keys)-1
			case c == 2:
				op, ok = "SeekGE "+at, it.SeekGE([]byte(at))
				pos, _ = slices.BinarySearch(keys, at)
			case c == 3:
				op, ok = "SeekLT "+at, it.SeekLT([]byte(at))
				pos, _ = slices.BinarySearch(keys, at)
				pos--
			case pos < 0 || pos >= len(keys):
				op, ok, pos = "First", it.First(), 0
			case c < 12:
				op, ok = "Next", it.Next()
				pos++
			default:
				op, ok = "Prev", it.Prev()
				pos--
			}
			valid := pos >= 0 && pos < len(keys)
			if ok != valid || ok != it.Valid() {
				t.Fatalf("%s [%q,%q) step %d %s: ok %v valid %v, model %v (pos %d of %d)", where, lower, upper, step, op, ok, it.Valid(), valid, pos, len(keys))
			}
			if ok && (string(it.Key()) != keys[pos] || string(it.Value()) != model[keys[pos]]) {
				t.Fatalf("%s [%q,%q) step %d %s: at %q=%q, want %q=%q", where, lower, upper, step, op, it.Key(), it.Value(), keys[pos], model[keys[pos]])
			}
		}
		must(t, it.Close())
	}
}

func bytesOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}
