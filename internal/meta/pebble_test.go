package meta_test

import (
	"fmt"
	"testing"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/meta/storetest"
)

var _ meta.Store = (*meta.Pebble)(nil)

func openT(t testing.TB, dir string) *meta.Pebble {
	t.Helper()
	p, err := meta.OpenPebble(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPebbleConformance runs the suite every meta.Store passes.
func TestPebbleConformance(t *testing.T) {
	storetest.Run(t, func(t testing.TB, dir string) meta.Store { return openT(t, dir) })
}

// Pebble locks its directory; a second open must fail rather than share
// the files.
func TestOpenLockedByAnotherStore(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	defer s.Close()
	if s2, err := meta.OpenPebble(dir); err == nil {
		s2.Close()
		t.Fatal("second OpenPebble of the same directory succeeded")
	}
}

// A batch's reads see its own writes, and the store's committed state for
// every other key (also commits made after the batch began), whether it
// tracks its writes or has written too many.
func TestBatchReadsOwnWritesAndCommittedState(t *testing.T) {
	for _, writes := range []int{1, meta.MaxTrackedWrites + 10} {
		t.Run(fmt.Sprint(writes), func(t *testing.T) {
			p := openT(t, t.TempDir())
			defer p.Close()
			storetest.Commit(t, p, map[string][]byte{"a": []byte("1"), "gone": []byte("x"), "kept": []byte("k")})
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
			storetest.Commit(t, p, map[string][]byte{"later": []byte("L")}) // committed after the batch began
			storetest.WantMissing(t, b, "gone")
			storetest.WantValue(t, b, "kept", "k")
			storetest.WantValue(t, b, "later", "L")
			if err := b.Set([]byte("a"), []byte("2")); err != nil {
				t.Fatal(err)
			}
			storetest.WantValue(t, b, "a", "2")
			storetest.WantValue(t, p, "a", "1")
			if writes > 1 {
				storetest.WantValue(t, b, "w000", "v")
			}
		})
	}
}
