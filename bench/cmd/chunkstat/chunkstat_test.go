package main

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/doppelfs/doppel/bench/internal/datafiles"
	"github.com/doppelfs/doppel/internal/chunker"
)

func scan(t *testing.T, dir string, policies ...string) Report {
	t.Helper()
	var chs []chunker.Chunker
	for _, s := range policies {
		p, err := chunker.ParsePolicy(s)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := chunker.New(p)
		if err != nil {
			t.Fatal(err)
		}
		chs = append(chs, ch)
	}
	sc := newScanner(chs)
	if err := datafiles.Walk(dir, sc.file); err != nil {
		t.Fatal(err)
	}
	return sc.report()
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func random(seed int64, n int) []byte {
	p := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(p)
	return p
}

// A copy and a shifted copy add (almost) nothing with CDC; with fixed
// blocks the shifted copy is all new, and whole-file dedup keeps both.
func TestDistinctBytes(t *testing.T) {
	dir := t.TempDir()
	data := random(1, 4<<20)
	write(t, filepath.Join(dir, "a"), data)
	write(t, filepath.Join(dir, "b"), data)
	write(t, filepath.Join(dir, "c"), append([]byte("xyz"), data...))
	r := scan(t, dir, "cdc", "fixed:4K")
	cdc, fixed, whole := r.Policies[0], r.Policies[1], r.Policies[2]
	if r.Files != 3 || r.Data != 3*(4<<20)+3 {
		t.Fatalf("files %d data %d", r.Files, r.Data)
	}
	if cdc.Bytes != r.Data || fixed.Bytes != r.Data {
		t.Fatalf("chunks must cover the data: cdc %d fixed %d of %d", cdc.Bytes, fixed.Bytes, r.Data)
	}
	if cdc.DistinctBytes > (4<<20)+(512<<10) {
		t.Errorf("cdc keeps %d bytes of a 4 MiB file stored three times, one shifted", cdc.DistinctBytes)
	}
	if fixed.DistinctBytes < 2*(4<<20) {
		t.Errorf("fixed:4K keeps %d bytes; the shifted copy cannot share blocks", fixed.DistinctBytes)
	}
	if whole.DistinctChunks != 2 || whole.DistinctBytes != 2*(4<<20)+3 {
		t.Errorf("whole-file: %d distinct, %d bytes", whole.DistinctChunks, whole.DistinctBytes)
	}
	if fixed.PaddedBytes < fixed.DistinctBytes || fixed.PaddedBytes%blockSize != 0 {
		t.Errorf("padded %d for distinct %d", fixed.PaddedBytes, fixed.DistinctBytes)
	}
}

// Holes are not data, and zero chunks are not stored.
func TestHolesAndZeros(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sparse")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	data := random(2, 1<<20)
	if _, err := f.WriteAt(data, 64<<20); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "zeros"), make([]byte, 1<<20))
	r := scan(t, dir, "fixed:4K")
	fixed := r.Policies[0]
	if fixed.DistinctBytes != 1<<20 {
		t.Errorf("distinct bytes %d, want the 1 MiB of random data", fixed.DistinctBytes)
	}
	if fixed.ZeroBytes < 1<<20 {
		t.Errorf("zero bytes %d, want at least the 1 MiB zero file", fixed.ZeroBytes)
	}
	if r.Data > 3<<20 { // a file system may keep a little around the data
		t.Errorf("data %d: holes were counted", r.Data)
	}
}

// Windows of the scanner must not change boundaries: a file larger than a
// window cuts like its copy cut in one piece.
func TestWindowsDoNotMoveBoundaries(t *testing.T) {
	dir := t.TempDir()
	data := random(3, window+window/2)
	write(t, filepath.Join(dir, "big"), data)
	r := scan(t, dir, "cdc")

	p, _ := chunker.ParsePolicy("cdc")
	ch, _ := chunker.New(p)
	want := newPolicyStats("ref", ch)
	want.begin(0)
	want.feed(bytes.Clone(data), true)
	if got := r.Policies[0]; got.Chunks != want.chunks || got.DistinctBytes != want.report().DistinctBytes {
		t.Errorf("windowed: %d chunks, %d bytes; one piece: %d chunks, %d bytes",
			got.Chunks, got.DistinctBytes, want.chunks, want.report().DistinctBytes)
	}
}
