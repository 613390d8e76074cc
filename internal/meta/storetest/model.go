package storetest

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/meta"
)

var modelSeed = flag.Uint64("meta.seed", 0, "seed of the meta.Store model test (0: from the clock)")

// testModel applies random batches (sets and deletes over a small key
// space, some discarded, some reopening the store) and compares point
// reads, forward and backward iteration and seeks, through the store, an
// open batch and a snapshot, with a map. A failure prints the seed:
// replay it with -meta.seed.
func testModel(t *testing.T, open Opener) {
	seed := *modelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -meta.seed=%d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, seed))
	dir := t.TempDir()
	s := open(t, dir)
	defer func() { s.Close() }()
	model := map[string]string{}
	key := func() string { return fmt.Sprintf("k%02x%s", r.IntN(64), strings.Repeat("\x00", r.IntN(2))) }
	var snap meta.Snapshot
	var snapModel map[string]string
	for step := range 300 {
		b := s.NewBatch()
		pending := maps.Clone(model)
		for range 1 + r.IntN(8) {
			k := key()
			if r.IntN(3) == 0 {
				must(t, b.Delete([]byte(k)))
				delete(pending, k)
			} else {
				v := fmt.Sprintf("v%d.%d", step, r.IntN(1000))
				must(t, b.Set([]byte(k), []byte(v)))
				pending[k] = v
			}
		}
		compare(t, r, b, pending, fmt.Sprintf("step %d, open batch", step))
		if r.IntN(5) == 0 {
			must(t, b.Close()) // discarded
		} else {
			must(t, b.Commit(r.IntN(10) == 0))
			must(t, b.Close())
			model = pending
		}
		compare(t, r, s, model, fmt.Sprintf("step %d, store", step))
		switch r.IntN(20) {
		case 0:
			if snap != nil {
				compare(t, r, snap, snapModel, fmt.Sprintf("step %d, snapshot", step))
				must(t, snap.Close())
			}
			snap, snapModel = s.Snapshot(), maps.Clone(model)
		case 1:
			if snap != nil {
				must(t, snap.Close())
				snap = nil
			}
			must(t, s.Close())
			s = open(t, dir)
		}
	}
	if snap != nil {
		compare(t, r, snap, snapModel, "end, snapshot")
		must(t, snap.Close())
	}
}

// compare checks every read of r against model.
func compare(t *testing.T, rnd *rand.Rand, r meta.Reader, model map[string]string, where string) {
	t.Helper()
	keys := slices.Sorted(maps.Keys(model))
	for _, k := range keys {
		if got, err := r.Get([]byte(k)); err != nil || string(got) != model[k] {
			t.Fatalf("%s: Get(%q) = %q, %v; want %q", where, k, got, err, model[k])
		}
	}
	if many, ok := r.(meta.MultiGetter); ok {
		var ask [][]byte
		for range 1 + rnd.IntN(12) {
			ask = append(ask, []byte(fmt.Sprintf("k%02x", rnd.IntN(64))))
		}
		got, err := many.GetMany(ask)
		if err != nil || len(got) != len(ask) {
			t.Fatalf("%s: GetMany of %d keys: %d values, %v", where, len(ask), len(got), err)
		}
		for i, k := range ask {
			if want, ok := model[string(k)]; ok != (got[i] != nil) || string(got[i]) != want {
				t.Fatalf("%s: GetMany: %q = %q, want %q (present %v)", where, k, got[i], want, ok)
			}
		}
	}
	lower, upper := fmt.Sprintf("k%02x", rnd.IntN(64)), ""
	if rnd.IntN(2) == 0 {
		upper = fmt.Sprintf("k%02x", rnd.IntN(64))
	}
	var want []string
	for _, k := range keys {
		if k >= lower && (upper == "" || k < upper) {
			want = append(want, k)
		}
	}
	if got := Keys(t, r, lower, upper, false); !slices.Equal(got, want) {
		t.Fatalf("%s: keys of [%q, %q) = %q, want %q", where, lower, upper, got, want)
	}
	back := slices.Clone(want)
	slices.Reverse(back)
	if got := Keys(t, r, lower, upper, true); !slices.Equal(got, back) {
		t.Fatalf("%s: keys of [%q, %q) backward = %q, want %q", where, lower, upper, got, back)
	}
	it, err := r.NewIter([]byte(lower), bytesOrNil(upper))
	must(t, err)
	defer it.Close()
	at := fmt.Sprintf("k%02x", rnd.IntN(64))
	i, _ := slices.BinarySearch(want, at)
	if ok := it.SeekGE([]byte(at)); ok != (i < len(want)) || ok && (string(it.Key()) != want[i] || string(it.Value()) != model[want[i]]) {
		t.Fatalf("%s: SeekGE(%q) in [%q, %q) = %v at %q", where, at, lower, upper, ok, it.Key())
	}
	if ok := it.SeekLT([]byte(at)); ok != (i > 0) || ok && string(it.Key()) != want[i-1] {
		t.Fatalf("%s: SeekLT(%q) in [%q, %q) = %v at %q", where, at, lower, upper, ok, it.Key())
	}
	if err := it.Error(); err != nil {
		t.Fatalf("%s: seeks in [%q, %q): %v", where, lower, upper, err)
	}
	// A fresh iterator's first move a seek below a key, then a walk on
	// either way: an extent scan's first steps.
	for _, forward := range []bool{true, false} {
		var walk []string
		if forward && i > 0 {
			walk = append(walk, want[i-1])
		}
		if forward {
			walk = append(walk, want[i:]...)
		} else {
			walk = slices.Clone(want[:i])
			slices.Reverse(walk)
		}
		if got := seekLTWalk(t, r, lower, upper, at, forward); !slices.Equal(got, walk) {
			t.Fatalf("%s: SeekLT(%q) in [%q, %q), then forward %v: %q, want %q", where, at, lower, upper, forward, got, walk)
		}
	}
}

// seekLTWalk opens an iterator over [lower, upper), seeks below at and
// returns the keys from there on, forward (Next) or backward (Prev).
func seekLTWalk(t *testing.T, r meta.Reader, lower, upper, at string, forward bool) []string {
	it, err := r.NewIter([]byte(lower), bytesOrNil(upper))
	must(t, err)
	defer it.Close()
	var got []string
	for ok := it.SeekLT([]byte(at)); ok; {
		got = append(got, string(it.Key()))
		if forward {
			ok = it.Next()
		} else {
			ok = it.Prev()
		}
	}
	if forward && len(got) == 0 {
		// Nothing below at: Next from before the first key starts there.
		for ok := it.Next(); ok; ok = it.Next() {
			got = append(got, string(it.Key()))
		}
	}
	must(t, it.Error())
	return got
}
