package blob

import (
	"bytes"
	"testing"
)

// TestOverwrite: new bytes written over chunks where they lie read back
// (side by side and apart, in both write modes), survive a reopen after
// Sync, and a length that does not match its location is refused before
// anything is written.
func TestOverwrite(t *testing.T) { inBothWriteModes(t, testOverwrite) }

func testOverwrite(t *testing.T) {
	dir := t.TempDir()
	d := openT(t, dir, Options{})
	block := func(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }
	locs, err := d.PutMany([][]byte{block('a', Align), block('b', Align), block('c', Align), block('d', 100)})
	if err != nil {
		t.Fatal(err)
	}
	// a and b side by side (one write), d apart.
	over := []Loc{locs[0], locs[1], locs[3]}
	data := [][]byte{block('x', Align), block('y', Align), block('z', 100)}
	if err := d.Overwrite(over, data); err != nil {
		t.Fatal(err)
	}
	for i, l := range over {
		checkRead(t, d, l, data[i])
	}
	checkRead(t, d, locs[2], block('c', Align))
	if err := d.Overwrite([]Loc{locs[2]}, [][]byte{block('w', 10)}); err == nil {
		t.Fatal("an overwrite whose length does not match its location was taken")
	}
	checkRead(t, d, locs[2], block('c', Align))
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openT(t, dir, Options{})
	for i, l := range over {
		checkRead(t, d, l, data[i])
	}
}

// TestSyncStoredLeavesOverwrites: SyncStored syncs the segments Put wrote
// and leaves those Overwrite wrote for the next Sync; a segment written
// both ways is synced by each and its references stay balanced (the
// store closes and reopens with every byte).
func TestSyncStoredLeavesOverwrites(t *testing.T) {
	dir := t.TempDir()
	d := openT(t, dir, Options{SegmentSize: 2 * Align})
	block := func(c byte) []byte { return bytes.Repeat([]byte{c}, Align) }
	old, err := d.PutMany([][]byte{block('a'), block('b')})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := d.Overwrite(old[:1], [][]byte{block('x')}); err != nil {
		t.Fatal(err)
	}
	fresh, err := d.Put(block('c')) // a new segment: the first is full
	if err != nil {
		t.Fatal(err)
	}
	count := func() (stored, overwritten int) {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.dirty), len(d.overwritten)
	}
	if s, o := count(); s != 1 || o != 1 || fresh.Segment == old[0].Segment {
		t.Fatalf("before SyncStored: %d segments stored to, %d written over (want 1 and 1, apart)", s, o)
	}
	if err := d.SyncStored(); err != nil {
		t.Fatal(err)
	}
	if s, o := count(); s != 0 || o != 1 {
		t.Fatalf("after SyncStored: %d segments stored to, %d written over (want 0 and 1)", s, o)
	}
	if err := d.Overwrite([]Loc{fresh}, [][]byte{block('y')}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Put(block('d')); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if s, o := count(); s != 0 || o != 0 {
		t.Fatalf("after Sync: %d segments stored to, %d written over (want none)", s, o)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openT(t, dir, Options{SegmentSize: 2 * Align})
	checkRead(t, d, old[0], block('x'))
	checkRead(t, d, old[1], block('b'))
	checkRead(t, d, fresh, block('y'))
}
