package meta

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
)

var _ Store = (*Pebble)(nil)

func openT(t *testing.T, dir string) *Pebble {
	t.Helper()
	p, err := OpenPebble(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// commit applies sets (value nil means delete) in one batch.
func commit(t *testing.T, s Store, sets map[string][]byte) {
	t.Helper()
	b := s.NewBatch()
	defer b.Close()
	for k, v := range sets {
		var err error
		if v == nil {
			err = b.Delete([]byte(k))
		} else {
			err = b.Set([]byte(k), v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
}

func wantValue(t *testing.T, r Reader, key, want string) {
	t.Helper()
	got, err := r.Get([]byte(key))
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if string(got) != want {
		t.Fatalf("Get(%q) = %q, want %q", key, got, want)
	}
}

func wantMissing(t *testing.T, r Reader, key string) {
	t.Helper()
	if v, err := r.Get([]byte(key)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(%q) = %q, %v; want ErrNotFound", key, v, err)
	}
}

// scan returns the keys of [lower, upper) walking forward.
func scan(t *testing.T, r Reader, lower, upper string) []string {
	t.Helper()
	it, err := r.NewIter(bytesOrNil(lower), bytesOrNil(upper))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var keys []string
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, string(it.Key()))
	}
	return keys
}

// scanBack returns the keys of [lower, upper) walking backward.
func scanBack(t *testing.T, r Reader, lower, upper string) []string {
	t.Helper()
	it, err := r.NewIter(bytesOrNil(lower), bytesOrNil(upper))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var keys []string
	for ok := it.Last(); ok; ok = it.Prev() {
		keys = append(keys, string(it.Key()))
	}
	return keys
}

func bytesOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

func TestGetSetDelete(t *testing.T) {
	s := openT(t, t.TempDir())
	defer s.Close()

	wantMissing(t, s, "a")
	commit(t, s, map[string][]byte{"a": []byte("1"), "b": []byte("2"), "empty": {}})
	wantValue(t, s, "a", "1")
	wantValue(t, s, "b", "2")
	// An empty value is a value, not a missing key.
	wantValue(t, s, "empty", "")

	commit(t, s, map[string][]byte{"a": []byte("one"), "b": nil})
	wantValue(t, s, "a", "one")
	wantMissing(t, s, "b")
	// Deleting a missing key is fine.
	commit(t, s, map[string][]byte{"never": nil})
	wantMissing(t, s, "never")
}

func TestGetReturnsCopy(t *testing.T) {
	// Values are documented as copies the caller owns: scribbling on one
	// must not change the store or later reads.
	s := openT(t, t.TempDir())
	defer s.Close()
	commit(t, s, map[string][]byte{"k": []byte("value")})
	v, err := s.Get([]byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	copy(v, "XXXXX")
	wantValue(t, s, "k", "value")

	b := s.NewBatch()
	defer b.Close()
	if err := b.Set([]byte("k2"), []byte("batch")); err != nil {
		t.Fatal(err)
	}
	v, err = b.Get([]byte("k2"))
	if err != nil {
		t.Fatal(err)
	}
	copy(v, "XXXXX")
	wantValue(t, b, "k2", "batch")
}

func TestSetCopiesArguments(t *testing.T) {
	// Callers reuse key and value buffers after Set.
	s := openT(t, t.TempDir())
	defer s.Close()
	b := s.NewBatch()
	defer b.Close()
	key, val := []byte("key"), []byte("val")
	if err := b.Set(key, val); err != nil {
		t.Fatal(err)
	}
	copy(key, "zzz")
	copy(val, "zzz")
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	wantValue(t, s, "key", "val")
	wantMissing(t, s, "zzz")
}

func TestBatchSeesOwnWrites(t *testing.T) {
	s := openT(t, t.TempDir())
	defer s.Close()
	commit(t, s, map[string][]byte{"a": []byte("1"), "c": []byte("3"), "e": []byte("5")})

	b := s.NewBatch()
	defer b.Close()
	for _, op := range []struct{ k, v string }{{"b", "2"}, {"c", "33"}, {"d", "4"}} {
		if err := b.Set([]byte(op.k), []byte(op.v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Delete([]byte("e")); err != nil {
		t.Fatal(err)
	}

	// The batch reads its writes over the committed state...
	wantValue(t, b, "a", "1")
	wantValue(t, b, "b", "2")
	wantValue(t, b, "c", "33")
	wantMissing(t, b, "e")
	if got, want := scan(t, b, "", ""), []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("batch iterator keys %q, want %q", got, want)
	}
	it, err := b.NewIter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !it.SeekGE([]byte("c")) || string(it.Value()) != "33" {
		t.Errorf("batch iterator at c: valid %v value %q, want 33", it.Valid(), it.Value())
	}
	it.Close()

	// ...while the store does not see them before Commit.
	wantMissing(t, s, "b")
	wantValue(t, s, "c", "3")
	wantValue(t, s, "e", "5")
	if got, want := scan(t, s, "", ""), []string{"a", "c", "e"}; !slices.Equal(got, want) {
		t.Errorf("store keys before commit %q, want %q", got, want)
	}

	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	wantValue(t, s, "b", "2")
	wantValue(t, s, "c", "33")
	wantMissing(t, s, "e")
	if got, want := scan(t, s, "", ""), []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("store keys after commit %q, want %q", got, want)
	}
}

func TestBatchSetThenDelete(t *testing.T) {
	// Within one batch the last write of a key wins, in both orders.
	s := openT(t, t.TempDir())
	defer s.Close()
	commit(t, s, map[string][]byte{"x": []byte("old")})
	b := s.NewBatch()
	defer b.Close()
	must(t, b.Set([]byte("n"), []byte("new")))
	must(t, b.Delete([]byte("n")))
	must(t, b.Delete([]byte("x")))
	must(t, b.Set([]byte("x"), []byte("again")))
	wantMissing(t, b, "n")
	wantValue(t, b, "x", "again")
	must(t, b.Commit(false))
	wantMissing(t, s, "n")
	wantValue(t, s, "x", "again")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestUncommittedBatchLeavesNoTrace(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	commit(t, s, map[string][]byte{"keep": []byte("1")})

	b := s.NewBatch()
	must(t, b.Set([]byte("ghost"), []byte("boo")))
	must(t, b.Delete([]byte("keep")))
	must(t, b.Close())
	// Closing twice is harmless.
	must(t, b.Close())

	wantMissing(t, s, "ghost")
	wantValue(t, s, "keep", "1")
	if got := scan(t, s, "", ""); !slices.Equal(got, []string{"keep"}) {
		t.Errorf("keys after discarded batch: %q", got)
	}
	// Nor after reopening.
	must(t, s.Close())
	s = openT(t, dir)
	defer s.Close()
	wantMissing(t, s, "ghost")
	wantValue(t, s, "keep", "1")
}

func TestBatchIsolation(t *testing.T) {
	// Two open batches do not see each other's writes.
	s := openT(t, t.TempDir())
	defer s.Close()
	b1, b2 := s.NewBatch(), s.NewBatch()
	defer b1.Close()
	defer b2.Close()
	must(t, b1.Set([]byte("one"), []byte("1")))
	must(t, b2.Set([]byte("two"), []byte("2")))
	wantMissing(t, b1, "two")
	wantMissing(t, b2, "one")
	must(t, b1.Commit(false))
	// A batch reads committed state through to the store.
	wantValue(t, b2, "one", "1")
	must(t, b2.Commit(false))
	wantValue(t, s, "one", "1")
	wantValue(t, s, "two", "2")
}

func TestIterator(t *testing.T) {
	s := openT(t, t.TempDir())
	defer s.Close()
	sets := map[string][]byte{}
	for _, k := range []string{"a", "b1", "b2", "b3", "c", "c\x00", "d"} {
		sets[k] = []byte("v" + k)
	}
	commit(t, s, sets)

	// Each reader (store and a batch with its own writes) must give the same
	// view of the same data.
	b := s.NewBatch()
	defer b.Close()
	must(t, b.Set([]byte("b25"), []byte("vb25")))
	must(t, b.Delete([]byte("b3")))

	tests := []struct {
		name         string
		r            Reader
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
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := scan(t, tc.r, tc.lower, tc.upper); !slices.Equal(got, tc.want) {
				t.Errorf("forward %q, want %q", got, tc.want)
			}
			back := slices.Clone(tc.want)
			slices.Reverse(back)
			if got := scanBack(t, tc.r, tc.lower, tc.upper); !slices.Equal(got, back) {
				t.Errorf("backward %q, want %q", got, back)
			}
		})
	}
}

func TestIteratorSeek(t *testing.T) {
	s := openT(t, t.TempDir())
	defer s.Close()
	commit(t, s, map[string][]byte{"b": []byte("B"), "d": []byte("D"), "f": []byte("F"), "h": []byte("H")})
	b := s.NewBatch()
	defer b.Close()
	must(t, b.Set([]byte("e"), []byte("E")))

	// Bounds [c, g): b and h are outside.
	tests := []struct {
		name string
		r    Reader
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
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			it, err := tc.r.NewIter([]byte("c"), []byte("g"))
			if err != nil {
				t.Fatal(err)
			}
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

func TestIteratorSeekThenStep(t *testing.T) {
	// The extent scan does SeekLT then Next, and First when SeekLT fails.
	s := openT(t, t.TempDir())
	defer s.Close()
	commit(t, s, map[string][]byte{"k1": {1}, "k3": {3}, "k5": {5}})
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

func TestReopenKeepsCommittedData(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	const n = 500
	b := s.NewBatch()
	for i := range n {
		must(t, b.Set(fmt.Appendf(nil, "key%05d", i), fmt.Appendf(nil, "value%d", i)))
	}
	must(t, b.Commit(false)) // not synced: Close must still keep it
	must(t, b.Close())
	commit(t, s, map[string][]byte{"key00007": nil})
	must(t, s.Close())

	s = openT(t, dir)
	defer s.Close()
	keys := scan(t, s, "key", "kez")
	if len(keys) != n-1 {
		t.Fatalf("%d keys after reopen, want %d", len(keys), n-1)
	}
	wantMissing(t, s, "key00007")
	wantValue(t, s, "key00123", "value123")
	wantValue(t, s, "key00499", "value499")
}

func TestSyncCommitAndSync(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	b := s.NewBatch()
	must(t, b.Set([]byte("durable"), []byte("yes")))
	must(t, b.Commit(true))
	must(t, b.Close())
	commit(t, s, map[string][]byte{"later": []byte("synced")})
	must(t, s.Sync())
	// Sync with nothing new to write is fine too.
	must(t, s.Sync())
	if u := s.DiskUsage(); u <= 0 {
		t.Errorf("DiskUsage = %d, want > 0", u)
	}
	must(t, s.Close())

	s = openT(t, dir)
	defer s.Close()
	wantValue(t, s, "durable", "yes")
	wantValue(t, s, "later", "synced")
}

func TestOpenLockedByAnotherStore(t *testing.T) {
	// Pebble locks its directory; a second open must fail rather than share
	// the files.
	dir := t.TempDir()
	s := openT(t, dir)
	defer s.Close()
	if s2, err := OpenPebble(dir); err == nil {
		s2.Close()
		t.Fatal("second OpenPebble of the same directory succeeded")
	}
}

func TestBinaryKeys(t *testing.T) {
	// Schema keys are binary: NUL and 0xff bytes must order bytewise.
	s := openT(t, t.TempDir())
	defer s.Close()
	keys := []string{"\x00", "\x00\x00", "\x00\xff", "\x01", "\xfe", "\xff", "\xff\xff"}
	sets := map[string][]byte{}
	for _, k := range keys {
		sets[k] = []byte(k)
	}
	commit(t, s, sets)
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

func TestSnapshotIsFrozen(t *testing.T) {
	s := openT(t, t.TempDir())
	defer s.Close()
	commit(t, s, map[string][]byte{"a": []byte("1"), "b": []byte("2")})
	snap := s.Snapshot()
	defer snap.Close()
	commit(t, s, map[string][]byte{"a": []byte("one"), "b": nil, "c": []byte("3")})
	wantValue(t, snap, "a", "1")
	wantValue(t, snap, "b", "2")
	wantMissing(t, snap, "c")
	if got := scan(t, snap, "", ""); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("snapshot scan = %q, want [a b]", got)
	}
	wantValue(t, s, "a", "one") // the store itself moved on
	if got := scan(t, s, "", ""); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("store scan = %q, want [a c]", got)
	}
}

// A batch's reads see its own writes, and the store's committed state for
// every other key, whether it tracks its writes or has written too many.
func TestBatchReadsOwnWritesAndCommittedState(t *testing.T) {
	for _, writes := range []int{1, maxTrackedWrites + 10} {
		t.Run(fmt.Sprint(writes), func(t *testing.T) {
			p := openT(t, t.TempDir())
			defer p.Close()
			commit(t, p, map[string][]byte{"a": []byte("1"), "gone": []byte("x"), "kept": []byte("k")})
			b := p.NewBatch()
			defer b.Close()
			for i := range writes - 1 {
				if err := b.Set(fmt.Appendf(nil, "w%03d", i), []byte("v")); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Delete([]byte("gone")); err != nil {
				t.Fatal(err)
			}
			commit(t, p, map[string][]byte{"later": []byte("L")}) // committed after the batch began
			wantMissing(t, b, "gone")
			wantValue(t, b, "kept", "k")
			wantValue(t, b, "later", "L")
			if err := b.Set([]byte("a"), []byte("2")); err != nil {
				t.Fatal(err)
			}
			wantValue(t, b, "a", "2")
			wantValue(t, p, "a", "1")
			if writes > 1 {
				wantValue(t, b, "w000", "v")
			}
		})
	}
}
