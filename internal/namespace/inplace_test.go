package namespace_test

import (
	"bytes"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

// TestWritesInPlaceThroughFiles: whole blocks written over a disk image's
// blocks through the file interface (buffered, flushed at release) go
// in place, and a clone of the file taken before keeps the old bytes
// (its pin makes the blocks shared, so they are written copy-on-write).
func TestWritesInPlaceThroughFiles(t *testing.T) {
	v, _ := openVolumeWith(t, volume.InitOptions{Chunking: "fixed:4K"})
	if !v.Engine.WritesInPlace() {
		t.Skip("skipping: this volume does not write blocks in place")
	}
	ns := v.NS
	r := rand.New(rand.NewPCG(1, 2))
	testutil.Must(ns.Mkdir(root, vfs.RootIno, "d", 0o755))
	dir := testutil.Must(ns.Lookup(vfs.RootIno, "d")).Ino
	_, h, err := ns.Create(root, dir, "disk.img", 0o644, syscall.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	data := testutil.RandBytes(r, 64*4096)
	testutil.Must(ns.Write(h, 0, data))
	testutil.Must(0, ns.Release(h))
	ino := testutil.Must(ns.Lookup(dir, "disk.img")).Ino

	write := func(off int, p []byte) {
		t.Helper()
		h := testutil.Must(ns.Open(ino, syscall.O_RDWR))
		testutil.Must(ns.Write(h, int64(off), p))
		testutil.Must(0, ns.Release(h))
	}
	before := v.Engine.Counters().OverwrittenBlocks
	over := testutil.RandBytes(r, 16*4096)
	write(8*4096, over)
	copy(data[8*4096:], over)
	if n := v.Engine.Counters().OverwrittenBlocks - before; n != 16 {
		t.Errorf("%d blocks written in place, want 16", n)
	}
	checkFile(t, v, ino, data)

	// A clone pins the file: its blocks are not written over.
	testutil.Must(v.NS.ClonePath("/d", "/c", namespace.CloneOptions{}))
	cdir := testutil.Must(ns.Lookup(vfs.RootIno, "c")).Ino
	cino := testutil.Must(ns.Lookup(cdir, "disk.img")).Ino
	old := bytes.Clone(data)
	before = v.Engine.Counters().OverwrittenBlocks
	over = testutil.RandBytes(r, 16*4096)
	write(8*4096, over)
	copy(data[8*4096:], over)
	if n := v.Engine.Counters().OverwrittenBlocks - before; n != 0 {
		t.Errorf("%d blocks a clone shares written in place", n)
	}
	checkFile(t, v, ino, data)
	checkFile(t, v, cino, old)

	// Blocks the file wrote since the clone are its own again.
	before = v.Engine.Counters().OverwrittenBlocks
	write(8*4096, testutil.RandBytes(r, 16*4096))
	t.Logf("blocks written in place over blocks written after the clone: %d of 16", v.Engine.Counters().OverwrittenBlocks-before)
	checkFile(t, v, cino, old)
}

func checkFile(t *testing.T, v *volume.Volume, ino uint64, want []byte) {
	t.Helper()
	h := testutil.Must(v.NS.Open(ino, syscall.O_RDONLY))
	defer v.NS.Release(h)
	got := make([]byte, len(want)+1)
	n := testutil.Must(v.NS.Read(h, 0, got))
	if n != len(want) || !bytes.Equal(got[:n], want) {
		t.Fatalf("file reads %d bytes, not as written", n)
	}
}
