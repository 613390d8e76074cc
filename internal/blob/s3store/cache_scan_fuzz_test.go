package s3store

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/doppelfs/doppel/internal/blob"
)

// FuzzCacheScan guards the read cache's decoder of its slab files, which
// a crash or a full disk can leave with torn records and stale bytes:
// a slab of arbitrary bytes, with headers planted at Align boundaries
// (whole ones, so that the fuzzer gets past their hash), must index only
// records that lie inside the slab, in order, without overlapping, each
// naming a valid range and sized for it.
func FuzzCacheScan(f *testing.F) {
	plant := func(at byte, seq byte, seg uint16, length uint32, off uint64) []byte {
		b := []byte{at, seq}
		b = binary.BigEndian.AppendUint16(b, seg)
		b = binary.BigEndian.AppendUint32(b, length)
		return binary.BigEndian.AppendUint64(b, off)
	}
	f.Add([]byte{}, []byte{})
	f.Add([]byte("noise"), plant(0, 1, 1, 4000, 0))
	f.Add([]byte{}, append(plant(0, 1, 1, 4000, 0), plant(1, 2, 2, 100, 1<<20)...))
	f.Add([]byte{}, append(plant(0, 2, 1, 9000, 0), plant(1, 1, 1, 100, 0)...)) // a newer record over an older header
	f.Add([]byte{}, plant(3, 1, 0, 100, 0))                                     // segment 0: not a range
	f.Add([]byte{}, plant(15, 1, 1, 8000, 0))                                   // past the slab's end
	f.Fuzz(func(t *testing.T, noise, plants []byte) {
		const blocks = 16
		c := &cache{slabSize: blocks * blob.Align}
		b := make([]byte, c.slabSize)
		copy(b, noise)
		for ; len(plants) >= 16; plants = plants[16:] {
			at := int64(plants[0]%blocks) * blob.Align
			putHeader(b[at:at+headerSize], &record{seq: uint64(plants[1]), loc: blob.Loc{
				Segment: uint32(binary.BigEndian.Uint16(plants[2:])),
				Length:  binary.BigEndian.Uint32(plants[4:]),
				Offset:  binary.BigEndian.Uint64(plants[8:]),
			}})
		}
		path := filepath.Join(t.TempDir(), "slab")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		end := int64(0)
		for _, r := range c.scan(fh, 0) {
			switch {
			case r.pos.slab != 0 || r.pos.off < end || r.pos.off%blob.Align != 0:
				t.Fatalf("record at %+v: after the last one's end %d, or off a boundary", r.pos, end)
			case r.pos.off+r.size > c.slabSize:
				t.Fatalf("record at %d of %d bytes runs past the slab's %d", r.pos.off, r.size, c.slabSize)
			case r.loc.Length == 0 || !validRange(r.loc) || r.size != cacheRecordSize(r.loc.Length):
				t.Fatalf("record at %d: range %+v, size %d", r.pos.off, r.loc, r.size)
			}
			end = r.pos.off + r.size
		}
	})
}
