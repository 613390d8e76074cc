package versions

import (
	"errors"
	"testing"

	"github.com/doppelfs/doppel/internal/meta/storetest"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// TestAsOfIterReportsFailure: when the live iterator under an as-of walk
// fails, the walk stops with its error instead of ending as if the range
// did (the retained side alone would look like all there is).
func TestAsOfIterReportsFailure(t *testing.T) {
	m := openMem(t)
	b := m.NewBatch()
	for off := int64(0); off < 10; off++ {
		x := schema.Extent{Length: 1}
		testutil.Check(t, b.Set(schema.ExtentKey(2, off), x.Encode()))
	}
	testutil.Check(t, b.Commit(false))
	boom := errors.New("boom")
	r := AsOf(storetest.FailingReader(m, 4, boom), 5)
	it, err := r.NewIter(schema.ExtentRange(2))
	testutil.Check(t, err)
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	if n >= 10 {
		t.Fatalf("walked %d of 10 extents through a failing store", n)
	}
	if !errors.Is(it.Error(), boom) {
		t.Fatalf("after %d extents: Error() = %v, want %v", n, it.Error(), boom)
	}
	if err := it.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close() = %v, want %v", err, boom)
	}
	// Without a failure the same walk sees all ten and no error.
	it, err = AsOf(m, 5).NewIter(schema.ExtentRange(2))
	testutil.Check(t, err)
	n = 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	if n != 10 || it.Error() != nil {
		t.Fatalf("%d extents, error %v; want 10, nil", n, it.Error())
	}
	testutil.Check(t, it.Close())
}
