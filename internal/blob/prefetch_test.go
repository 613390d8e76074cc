package blob

import (
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestInMemoryFollowsThePageCache: a chunk just written and synced
// through the page cache is in memory, and once forgotten it is not; a
// location past the segment's end, or in no segment, never is.
func TestInMemoryFollowsThePageCache(t *testing.T) {
	d := openT(t, t.TempDir(), Options{BufferedWrites: true})
	defer d.Close()
	data := testutil.RandBytes(testutil.Rand(t), 64<<10)
	loc := put(t, d, data)
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if !d.InMemory(loc) {
		t.Fatal("a chunk just written through the page cache is not in memory")
	}
	d.Forget([]Loc{loc})
	if d.InMemory(loc) {
		t.Skip("the host keeps the segment file's pages after POSIX_FADV_DONTNEED (tmpfs?)")
	}
	if d.InMemory(Loc{Segment: loc.Segment, Offset: 1 << 30, Length: 4096}) {
		t.Error("a location past the segment's end is in memory")
	}
	if d.InMemory(Loc{Segment: loc.Segment + 100, Length: 4096}) {
		t.Error("a location in a segment that does not exist is in memory")
	}
}
