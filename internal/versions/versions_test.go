package versions

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

var seedFlag = flag.Uint64("versions.seed", 0, "seed of TestRetainModel (0: time)")

// state is the model: live key -> value.
type state map[string]string

func openMem(t *testing.T) *meta.Pebble {
	t.Helper()
	m, err := meta.OpenPebbleFS("db", vfs.NewMem())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestRetainModel changes random keys of a few inodes, takes pins,
// releases them, and checks after every step that AsOf at each remaining
// pin reads exactly the model's copy of that moment, point reads and
// iteration in both directions alike, and that retained extents hold
// exactly the chunk references the pins need.
func TestRetainModel(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -versions.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	m := openMem(t)
	r, err := NewRetainer(m)
	if err != nil {
		t.Fatal(err)
	}
	live := state{}
	refs := map[schema.Hash]int64{} // held by retained extents
	ref := func(x schema.Extent, d int64) { refs[x.Hash] += d }
	// Every inode is a child of the root, so every pin covers it.
	b := m.NewBatch()
	for ino := uint64(2); ino < 6; ino++ {
		testutil.Check(t, b.Set(schema.ParentKey(ino, rootIno, fmt.Sprint(ino)), nil))
		live[string(schema.ParentKey(ino, rootIno, fmt.Sprint(ino)))] = ""
	}
	testutil.Check(t, b.Commit(false))
	snaps := map[uint64]state{}
	scope := map[uint64]uint64{} // pin -> its root
	version := uint64(10)
	for step := 0; step < 1200; step++ {
		version++
		b := m.NewBatch()
		switch op := rng.IntN(20); {
		case op == 0 && len(snaps) < 6:
			// Half the pins cover the whole tree, half one inode: then a
			// released pin's versions move to pins that do not cover them.
			root := uint64(rootIno)
			if rng.IntN(2) == 0 {
				root = uint64(2 + rng.IntN(4))
			}
			r.Add(Pinned{Version: version, Pin: schema.Pin{Root: root, NextIno: 1 << 20, Held: true}})
			snaps[version] = clone(live)
			scope[version] = root
		case op == 1 && len(snaps) > 0:
			pins := r.Pins()
			v := pins[rng.IntN(len(pins))].Version
			r.Remove(v)
			older := uint64(0)
			for _, p := range r.Pins() {
				if p.Version < v {
					older = p.Version
				}
			}
			for done := false; !done; {
				done, _, err = ReleaseStep(b, v, older, 1+rng.IntN(4), ref)
				testutil.Check(t, err)
			}
			delete(snaps, v)
		default:
			for n := 1 + rng.IntN(3); n > 0; n-- {
				k := randomKey(rng)
				testutil.Check(t, r.BeforeChange(b, k, ref))
				if rng.IntN(3) == 0 {
					testutil.Check(t, b.Delete(k))
					delete(live, string(k))
				} else {
					v := randomValue(rng, k)
					testutil.Check(t, b.Set(k, v))
					live[string(k)] = string(v)
				}
			}
		}
		testutil.Check(t, b.Commit(false))
		checkView(t, m, 0, live, step, rootIno)
		want := map[schema.Hash]int64{}
		for v, s := range snaps {
			checkView(t, m, v, s, step, scope[v])
		}
		countRetainedRefs(t, m, want)
		for h, n := range refs {
			if n != want[h] {
				t.Fatalf("step %d: chunk %x: refs counted %d, retained extents hold %d", step, h[:4], n, want[h])
			}
		}
		for h, n := range want {
			if refs[h] != n {
				t.Fatalf("step %d: chunk %x: retained extents hold %d, counted %d", step, h[:4], n, refs[h])
			}
		}
	}
}

func countRetainedRefs(t *testing.T, m meta.Reader, want map[schema.Hash]int64) {
	it, err := m.NewIter(schema.RetainedRange())
	testutil.Check(t, err)
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		key, _, err := schema.ParseRetainedKey(it.Key())
		testutil.Check(t, err)
		rv, err := schema.DecodeRetained(it.Value())
		testutil.Check(t, err)
		if key[0] == 'e' && rv.Present {
			x, err := schema.DecodeExtent(rv.Value)
			testutil.Check(t, err)
			want[x.Hash]++
		}
	}
}

// checkView compares the reader as of pin (0: live) with the model.
func checkView(t *testing.T, m meta.Reader, pin uint64, want state, step int, root uint64) {
	t.Helper()
	var r meta.Reader = m
	if pin != 0 {
		r = AsOf(m, pin)
	}
	for ino := uint64(1); ino < 7; ino++ {
		if root != rootIno && ino != root {
			continue // not covered: the pin keeps nothing of it
		}
		for _, bounds := range [][2][]byte{
			pair(schema.XattrRange(ino)), pair(schema.DirentRange(ino)), pair(schema.ExtentRange(ino)),
		} {
			var wantKeys []string
			for k := range want {
				if k >= string(bounds[0]) && k < string(bounds[1]) {
					wantKeys = append(wantKeys, k)
				}
			}
			slices.Sort(wantKeys)
			it, err := r.NewIter(bounds[0], bounds[1])
			testutil.Check(t, err)
			var got []string
			for it.First(); it.Valid(); it.Next() {
				got = append(got, string(it.Key()))
				if string(it.Value()) != want[string(it.Key())] {
					t.Fatalf("step %d pin %d: key %q = %q, want %q", step, pin, it.Key(), it.Value(), want[string(it.Key())])
				}
			}
			var back []string
			for it.Last(); it.Valid(); it.Prev() {
				back = append(back, string(it.Key()))
			}
			slices.Reverse(back)
			if !slices.Equal(got, wantKeys) || !slices.Equal(back, wantKeys) {
				t.Fatalf("step %d pin %d: keys\n fwd %q\nback %q\nwant %q", step, pin, got, back, wantKeys)
			}
			// SeekLT as extent scans use it, then Next.
			for i, k := range wantKeys {
				if !it.SeekLT([]byte(k)) {
					if i != 0 {
						t.Fatalf("step %d pin %d: SeekLT(%q) found nothing", step, pin, k)
					}
				} else if string(it.Key()) != wantKeys[i-1] || !it.Next() || string(it.Key()) != k {
					t.Fatalf("step %d pin %d: SeekLT/Next around %q wrong", step, pin, k)
				}
			}
			testutil.Check(t, it.Close())
			for _, k := range wantKeys {
				v, err := r.Get([]byte(k))
				if err != nil || string(v) != want[k] {
					t.Fatalf("step %d pin %d: Get(%q) = %q, %v; want %q", step, pin, k, v, err, want[k])
				}
			}
		}
	}
}

func pair(a, b []byte) [2][]byte { return [2][]byte{a, b} }

func randomKey(rng *rand.Rand) []byte {
	ino := uint64(2 + rng.IntN(4))
	names := []string{"a", "ab", "abc", "b", "ba"}
	switch rng.IntN(3) {
	case 0:
		return schema.XattrKey(ino, names[rng.IntN(len(names))])
	case 1:
		return schema.DirentKey(ino, names[rng.IntN(len(names))])
	}
	return schema.ExtentKey(ino, int64(rng.IntN(4))<<16)
}

func randomValue(rng *rand.Rand, key []byte) []byte {
	if key[0] == 'e' {
		var h schema.Hash
		h[0] = byte(rng.IntN(5))
		x := schema.Extent{Hash: h, Length: 10}
		return x.Encode()
	}
	return bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, rng.IntN(3))
}

func clone(s state) state {
	c := state{}
	for k, v := range s {
		c[k] = v
	}
	return c
}
