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
