package blob

import (
	"bytes"
	"testing"
	"time"
)

// TestSlotsTakeOneBlockChunks: pooled slots take the one-block chunks of
// a put (larger ones are appended), a slot is claimed once, a slot put
// into but not claimed goes back to the pool when freed instead of being
// punched, and slots expire by age.
func TestSlotsTakeOneBlockChunks(t *testing.T) {
	d, err := OpenDir(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	block := func(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }
	old, err := d.PutMany([][]byte{block('a', Align), block('b', Align), block('c', Align), block('d', 100)})
	if err != nil {
		t.Fatal(err)
	}
	if rest := d.OfferSlots([]Loc{old[1], old[2], {Segment: old[0].Segment, Offset: 1 << 30, Length: 3 * Align}}); len(rest) != 1 || rest[0].Length != 3*Align {
		t.Fatalf("OfferSlots kept back %v, want only the three-block location", rest)
	}
	data := [][]byte{block('x', Align), block('y', 3*Align), block('z', 10)}
	locs, err := d.PutMany(data)
	if err != nil {
		t.Fatal(err)
	}
	if locs[0].Offset != old[1].Offset || locs[2].Offset != old[2].Offset || locs[1].Offset <= old[3].Offset {
		t.Fatalf("put went to %v; want x and z in the slots %v and %v, y appended", locs, old[1], old[2])
	}
	for i, l := range locs {
		if got, err := d.Read(l, nil); err != nil || !bytes.Equal(got, data[i]) {
			t.Fatalf("chunk %d at %+v reads back %q, %v", i, l, got, err)
		}
	}
	if !d.ClaimSlot(locs[0]) || d.ClaimSlot(locs[0]) || d.ClaimSlot(locs[1]) {
		t.Fatal("a slot put into must be claimable once, an appended chunk never")
	}
	if err := d.Free(locs[2]); err != nil { // not claimed: back to the pool
		t.Fatal(err)
	}
	if got, err := d.Read(locs[2], nil); err != nil || !bytes.Equal(got, data[2]) {
		t.Fatalf("a slot given back to the pool was punched: %q, %v", got, err)
	}
	if got := d.ExpireSlots(time.Hour); len(got) != 0 {
		t.Fatalf("slots expired before their time: %v", got)
	}
	time.Sleep(2 * time.Millisecond)
	got := d.ExpireSlots(time.Millisecond)
	if len(got) != 1 || got[0].Offset != old[2].Offset {
		t.Fatalf("ExpireSlots returned %v, want the slot at %d", got, old[2].Offset)
	}
	if locs, err := d.PutMany([][]byte{block('w', Align)}); err != nil || locs[0].Offset == old[2].Offset {
		t.Fatalf("a put after the pool emptied went to %v, the expired slot (%v)", locs, err)
	}
}

// TestSlotsSideBySideBeyondOneWrite: more freed blocks side by side than
// one pwritev takes (IOV_MAX iovecs) are written in several.
func TestSlotsSideBySideBeyondOneWrite(t *testing.T) {
	d, err := OpenDir(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const n = 3 * maxBatch
	data := make([][]byte, n)
	for i := range data {
		data[i] = bytes.Repeat([]byte{byte(i), byte(i >> 8)}, Align/2-i%3) // some shorter than a block: padding iovecs
	}
	old, err := d.PutMany(data)
	if err != nil {
		t.Fatal(err)
	}
	if rest := d.OfferSlots(old); len(rest) != 0 {
		t.Fatalf("OfferSlots kept back %d one-block locations", len(rest))
	}
	for i := range data {
		data[i] = bytes.Repeat([]byte{byte(i >> 8), byte(i), 7}, Align/3)
	}
	locs, err := d.PutMany(data)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range locs {
		if l.Offset != old[i].Offset {
			t.Fatalf("chunk %d went to %+v, not into the freed block %+v", i, l, old[i])
		}
		if got, err := d.Read(l, nil); err != nil || !bytes.Equal(got, data[i]) {
			t.Fatalf("chunk %d at %+v reads back wrong (%v)", i, l, err)
		}
	}
}
