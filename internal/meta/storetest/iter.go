package storetest

import (
	"bytes"
	"slices"
	"testing"

	"github.com/doppelfs/doppel/internal/meta"
)

func testIterator(t *testing.T, open Opener) {
	s := fresh(t, open)
	sets := map[string][]byte{}
	for _, k := range []string{"a", "b1", "b2", "b3", "c", "c\x00", "d"} {
		sets[k] = []byte("v" + k)
	}
	Commit(t, s, sets)
	// The store and a batch with its own writes give the same view of
	// the same data.
	b := s.NewBatch()
	defer b.Close()
	must(t, b.Set([]byte("b25"), []byte("vb25")))
	must(t, b.Delete([]byte("b3")))
	for _, tc := range []struct {
		name         string
		r            meta.Reader
		lower, upper string
		want         []string
	}{
		{"store all", s, "", "", []string{"a", "b1", "b2", "b3", "c", "c\x00", "d"}},
		{"store bounded", s, "b", "c", []string{"b1", "b2", "b3"}},
		{"store upper exclusive", s, "b2", "c\x00", []string{"b2", "b3", "c"}},
		{"store lower only", s, "c", "", []string{"c", "c\x00", "d"}},
		{"store empty range", s, "b4", "b9", nil},
		{"batch bounded", b, "b", "c", []string{"b1", "b2", "b25"}},
		{"batch all", b, "", "", []string{"a", "b1", "b2", "b25", "c", "c\x00", "d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Keys(t, tc.r, tc.lower, tc.upper, false); !slices.Equal(got, tc.want) {
				t.Errorf("forward %q, want %q", got, tc.want)
			}
			back := slices.Clone(tc.want)
			slices.Reverse(back)
			if got := Keys(t, tc.r, tc.lower, tc.upper, true); !slices.Equal(got, back) {
				t.Errorf("backward %q, want %q", got, back)
			}
		})
	}
}

func testIteratorSeek(t *testing.T, open Opener) {
	s := fresh(t, open)
	Commit(t, s, map[string][]byte{"b": []byte("B"), "d": []byte("D"), "f": []byte("F"), "h": []byte("H")})
	b := s.NewBatch()
	defer b.Close()
	must(t, b.Set([]byte("e"), []byte("E")))
	// Bounds [c, g): b and h are outside.
	for _, tc := range []struct {
		name string
		r    meta.Reader
		op   string
		key  string
		want string // "" means the iterator must be invalid
	}{
		{"GE exact", s, "GE", "d", "d"},
		{"GE between", s, "GE", "e", "f"},
		{"GE below lower", s, "GE", "a", "d"},
		{"GE past last", s, "GE", "f\x00", ""},
		{"GE at upper", s, "GE", "g", ""},
		{"LT exact", s, "LT", "f", "d"},
		{"LT between", s, "LT", "e", "d"},
		{"LT at first", s, "LT", "d", ""},
		{"LT above upper", s, "LT", "z", "f"},
		{"batch GE own write", b, "GE", "d\x00", "e"},
		{"batch LT own write", b, "LT", "f", "e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it, err := tc.r.NewIter([]byte("c"), []byte("g"))
			must(t, err)
			defer it.Close()
			var ok bool
			if tc.op == "GE" {
				ok = it.SeekGE([]byte(tc.key))
			} else {
				ok = it.SeekLT([]byte(tc.key))
			}
			if ok != it.Valid() {
				t.Fatalf("Seek returned %v but Valid() = %v", ok, it.Valid())
			}
			if tc.want == "" {
				if ok {
					t.Fatalf("Seek%s(%q) at %q, want invalid", tc.op, tc.key, it.Key())
				}
				return
			}
			if !ok || string(it.Key()) != tc.want {
				t.Fatalf("Seek%s(%q) = %v at %q, want %q", tc.op, tc.key, ok, it.Key(), tc.want)
			}
			if string(it.Value()) != string(bytes.ToUpper([]byte(tc.want))) {
				t.Fatalf("value at %q = %q", it.Key(), it.Value())
			}
		})
	}
}

// The extent scan does SeekLT then Next, and First when SeekLT fails.
func testIteratorSeekThenStep(t *testing.T, open Opener) {
	s := fresh(t, open)
	Commit(t, s, map[string][]byte{"k1": {1}, "k3": {3}, "k5": {5}})
	it, err := s.NewIter([]byte("k"), []byte("l"))
	must(t, err)
	defer it.Close()
	if !it.SeekLT([]byte("k4")) || string(it.Key()) != "k3" {
		t.Fatalf("SeekLT(k4) at %q", it.Key())
	}
	if !it.Next() || string(it.Key()) != "k5" {
		t.Fatalf("Next after SeekLT at %q", it.Key())
	}
	if it.Next() {
		t.Fatalf("Next past the end at %q", it.Key())
	}
	if it.SeekLT([]byte("k1")) {
		t.Fatalf("SeekLT(k1) valid at %q", it.Key())
	}
	if !it.First() || string(it.Key()) != "k1" {
		t.Fatalf("First at %q", it.Key())
	}
	if it.Prev() {
		t.Fatalf("Prev before the start at %q", it.Key())
	}
	if !it.Last() || string(it.Key()) != "k5" || !it.Prev() || string(it.Key()) != "k3" {
		t.Fatalf("Last then Prev at %q", it.Key())
	}
}

// Schema keys are binary: NUL and 0xff bytes must order bytewise.
func testBinaryKeys(t *testing.T, open Opener) {
	s := fresh(t, open)
	keys := []string{"\x00", "\x00\x00", "\x00\xff", "\x01", "\xfe", "\xff", "\xff\xff"}
	sets := map[string][]byte{}
	for _, k := range keys {
		sets[k] = []byte(k)
	}
	Commit(t, s, sets)
	it, err := s.NewIter(nil, nil)
	must(t, err)
	defer it.Close()
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		if !bytes.Equal(it.Key(), it.Value()) {
			t.Errorf("key %x has value %x", it.Key(), it.Value())
		}
		got = append(got, string(it.Key()))
	}
	if !slices.Equal(got, keys) {
		t.Errorf("keys %q, want %q", got, keys)
	}
}

func testSnapshotIsFrozen(t *testing.T, open Opener) {
	s := fresh(t, open)
	Commit(t, s, map[string][]byte{"a": []byte("1"), "b": []byte("2")})
	snap := s.Snapshot()
	defer snap.Close()
	Commit(t, s, map[string][]byte{"a": []byte("one"), "b": nil, "c": []byte("3")})
	WantValue(t, snap, "a", "1")
	WantValue(t, snap, "b", "2")
	WantMissing(t, snap, "c")
	if got := Keys(t, snap, "", "", false); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("snapshot scan = %q, want [a b]", got)
	}
	WantValue(t, s, "a", "one") // the store itself moved on
	if got := Keys(t, s, "", "", false); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("store scan = %q, want [a c]", got)
	}
}

// testIteratorEndIsNoError: running off either end of a range, or seeking
// outside it, leaves an iterator invalid with no error, on the store, a
// batch and a snapshot; Error is how a caller tells that from a failure.
func testIteratorEndIsNoError(t *testing.T, open Opener) {
	s := fresh(t, open)
	Commit(t, s, map[string][]byte{"a": []byte("A"), "b": []byte("B"), "c": []byte("C"), "d": []byte("D")})
	b := s.NewBatch()
	defer b.Close()
	must(t, b.Set([]byte("bb"), []byte("BB")))
	snap := s.Snapshot()
	defer snap.Close()
	for _, r := range []struct {
		name string
		r    meta.Reader
	}{{"store", s}, {"batch", b}, {"snapshot", snap}} {
		it, err := r.r.NewIter([]byte("b"), []byte("d"))
		must(t, err)
		noError := func(what string, ok, want bool) {
			t.Helper()
			if ok != want || it.Valid() != want {
				t.Fatalf("%s: %s = %v (valid %v), want %v", r.name, what, ok, it.Valid(), want)
			}
			if err := it.Error(); err != nil {
				t.Fatalf("%s: after %s: Error() = %v, want nil", r.name, what, err)
			}
		}
		noError("First", it.First(), true)
		for it.Next() {
		}
		noError("Next past the last key", it.Valid(), false)
		noError("Next again", it.Next(), false)
		noError("Last", it.Last(), true)
		for it.Prev() {
		}
		noError("Prev before the first key", it.Valid(), false)
		noError("SeekGE past the upper bound", it.SeekGE([]byte("e")), false)
		noError("SeekLT below the lower bound", it.SeekLT([]byte("a")), false)
		noError("SeekGE inside", it.SeekGE([]byte("c")), true)
		must(t, it.Close())
		empty, err := r.r.NewIter([]byte("x"), []byte("y"))
		must(t, err)
		if empty.First() || empty.Last() || empty.Error() != nil {
			t.Fatalf("%s: empty range: valid or Error() = %v", r.name, empty.Error())
		}
		must(t, empty.Close())
	}
}
