package versions

import (
	"testing"

	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// TestRetainedExtentOwnsNothing: a version kept of an owned extent is
// stored as an ordinary reference to the block's bytes, and ref hears of
// the extent as it was, owner and all, so that the transaction can give
// the block a record (content/owned.go).
func TestRetainedExtentOwnsNothing(t *testing.T) {
	m := openMem(t)
	b := m.NewBatch()
	key := schema.ExtentKey(2, 0)
	owned := schema.Extent{Hash: schema.Sum([]byte("block")), Length: 4096, Owned: true,
		Hint: schema.Hint{Segment: 1, Offset: 8192, Check: 5}}
	testutil.Check(t, b.Set(key, owned.Encode()))
	testutil.Check(t, b.Set(schema.ParentKey(2, rootIno, "disk.img"), nil)) // in the pin's tree
	testutil.Check(t, b.Commit(false))

	r, err := NewRetainer(m)
	testutil.Check(t, err)
	r.Add(Pinned{Version: 10, Pin: schema.Pin{Root: rootIno, NextIno: 100, Held: true}})
	b = m.NewBatch()
	defer b.Close()
	var told []schema.Extent
	testutil.Check(t, r.BeforeChange(b, key, func(x schema.Extent, d int64) {
		if d != 1 {
			t.Errorf("ref told %d references; want 1", d)
		}
		told = append(told, x)
	}))
	if len(told) != 1 || told[0] != owned {
		t.Fatalf("ref told %+v; want the owned extent as it was", told)
	}
	raw, err := b.Get(schema.RetainedKey(key, 10))
	testutil.Check(t, err)
	rv, err := schema.DecodeRetained(raw)
	testutil.Check(t, err)
	kept, err := schema.DecodeExtent(rv.Value)
	testutil.Check(t, err)
	want := owned
	want.Owned = false
	if kept != want {
		t.Errorf("kept %+v; want %+v: the same reference, owning nothing", kept, want)
	}
}
