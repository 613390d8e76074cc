package volume

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/testutil"
)

// Two hosts save the dead spans they know of one pack, each from its own
// view: a load sees the union, whatever order they saved in (one record
// per pack let the last save win); a pack gone drops every host's record.
func TestDeadRecordsOfSeveralWriters(t *testing.T) {
	m, err := meta.OpenPebble(filepath.Join(t.TempDir(), "meta"))
	testutil.Check(t, err)
	defer m.Close()
	writer := func(id uint64) deadRecords { return deadRecords{m: m, writer: func() uint64 { return id }} }
	a, b, none := writer(7), writer(9), writer(0)
	testutil.Check(t, none.SaveDead(map[uint32][]blob.Span{3: {{Start: 0, End: 10}}}, nil)) // an older volume's record
	testutil.Check(t, a.SaveDead(map[uint32][]blob.Span{3: {{Start: 100, End: 200}}, 4: {{Start: 0, End: 5}}}, nil))
	testutil.Check(t, b.SaveDead(map[uint32][]blob.Span{3: {{Start: 300, End: 400}}}, nil))
	// a saves again from a view that does not know b's span.
	testutil.Check(t, a.SaveDead(map[uint32][]blob.Span{3: {{Start: 100, End: 250}}}, nil))
	all, err := b.LoadDead()
	testutil.Check(t, err)
	got := blob.MergeSpans(all[3])
	want := []blob.Span{{Start: 0, End: 10}, {Start: 100, End: 250}, {Start: 300, End: 400}}
	if !slices.Equal(got, want) {
		t.Fatalf("pack 3's dead spans %v, want %v", got, want)
	}
	testutil.Check(t, b.SaveDead(nil, []uint32{3}))
	all, err = a.LoadDead()
	testutil.Check(t, err)
	if len(all[3]) != 0 || len(all[4]) != 1 {
		t.Fatalf("after pack 3 went: %v, want only pack 4's span", all)
	}
}
