package content

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/meta/storetest"
	"github.com/doppelfs/doppel/internal/schema"
)

// TestExtentsReportStoreFailure: an extent scan whose store fails in the
// middle returns the failure, not the extents read so far as the whole
// file; and a chunk lookup whose seek fails says so instead of calling
// the chunk missing (which would send the user to fsck).
func TestExtentsReportStoreFailure(t *testing.T) {
	m, err := meta.OpenPebbleFS("db", vfs.NewMem())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b := m.NewBatch()
	for i := int64(0); i < 10; i++ {
		x := schema.Extent{Length: 100}
		if err := b.Set(schema.ExtentKey(7, i*100), x.Encode()); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	ps, err := Extents(m, 7, 0, 1000)
	if err != nil || len(ps) != 10 {
		t.Fatalf("Extents = %d pieces, %v; want 10", len(ps), err)
	}
	boom := errors.New("boom")
	ps, err = Extents(storetest.FailingReader(m, 5, boom), 7, 0, 1000)
	if !errors.Is(err, boom) {
		t.Fatalf("Extents through a failing store = %d pieces, %v; want %v", len(ps), err, boom)
	}
	it, err := storetest.FailingReader(m, 0, boom).NewIter(schema.ChunkRange())
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if _, err := chunkAt(it, schema.Hash{1}); !errors.Is(err, boom) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("chunkAt through a failing store: %v; want %v, not ErrCorrupt", err, boom)
	}
}
