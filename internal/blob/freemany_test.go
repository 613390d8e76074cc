package blob

import (
	"bytes"
	"os"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestFreeMany frees chunks side by side and apart in one call: the
// punched ranges are exactly theirs (neighbours still read), the freed
// bytes are counted, and a bad location fails alone.
func TestFreeMany(t *testing.T) {
	inBothWriteModes(t, func(t *testing.T) {
		d := openT(t, t.TempDir(), Options{})
		defer d.Close()
		var data [][]byte
		for i := range 10 {
			data = append(data, testutil.SeededBytes(uint64(i), 4096-i)) // unaligned lengths
		}
		locs, err := d.PutMany(data)
		testutil.Check(t, err)
		testutil.Check(t, d.Sync())
		blocks := func() int64 {
			var st syscall.Stat_t
			testutil.Check(t, syscall.Stat(d.segPath(locs[0].Segment), &st))
			return st.Blocks * 512
		}
		before := blocks()
		free := []Loc{locs[9], locs[1], locs[0], locs[3], locs[2], locs[5], locs[7], locs[8]}
		bad := Loc{Segment: 0}
		freed, err := d.FreeMany(append(free, bad))
		if err == nil {
			t.Error("a bad location freed without an error")
		}
		want := int64(0)
		for _, l := range free {
			want += int64(l.Length)
		}
		if freed != want {
			t.Errorf("freed %d bytes, want %d", freed, want)
		}
		if got := before - blocks(); got < 8*4096 {
			t.Errorf("segment holds %d bytes fewer after freeing 8 chunks of 4 KiB", got)
		}
		for _, i := range []int{4, 6} {
			got, err := d.Read(locs[i], make([]byte, 4096))
			if err != nil || !bytes.Equal(got, data[i]) {
				t.Errorf("chunk %d between freed ones: %v", i, err)
			}
		}
		if _, err := os.Stat(d.segPath(locs[0].Segment)); err != nil {
			t.Errorf("the active segment went: %v", err)
		}
	})
}
