package blob_test

import (
	"testing"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/blob/storetest"
)

var _ blob.Store = (*blob.Dir)(nil)

// TestDirConformance runs the suite every blob.Store passes, with direct
// and with buffered segment writes.
func TestDirConformance(t *testing.T) {
	for _, buffered := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "buffered"}[buffered], func(t *testing.T) {
			storetest.Run(t, func(t testing.TB, dir string) blob.Store {
				d, err := blob.OpenDir(dir, blob.Options{SegmentSize: 1 << 20, BufferedWrites: buffered})
				if err != nil {
					t.Fatal(err)
				}
				return d
			})
		})
	}
}
