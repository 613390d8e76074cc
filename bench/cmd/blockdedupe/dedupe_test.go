package main

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/doppelfs/doppel/bench/internal/datafiles"
)

// request is one share call the deduper made.
type request struct {
	src, dst loc
	n        int64
}

// run dedupes dir with a recording share function instead of the ioctl.
func run(t *testing.T, dir string) (*deduper, []request) {
	t.Helper()
	d := newDeduper(4096, false)
	var reqs []request
	d.share = func(src, dst loc, n int64) (int64, bool, error) {
		reqs = append(reqs, request{src, dst, n})
		return n, false, nil
	}
	if err := datafiles.Walk(dir, d.file); err != nil {
		t.Fatal(err)
	}
	return d, reqs
}

func randomBlocks(seed int64, blocks int) []byte {
	p := make([]byte, blocks*4096)
	rand.New(rand.NewSource(seed)).Read(p)
	return p
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A copy becomes one request, its tail included (both end at EOF); a copy
// with a block inserted becomes two, around the new block.
func TestRequests(t *testing.T) {
	dir := t.TempDir()
	a := randomBlocks(1, 8)
	write(t, filepath.Join(dir, "a"), append(bytes.Clone(a), "tail"...))
	write(t, filepath.Join(dir, "b"), append(bytes.Clone(a), "tail"...))
	c := append(bytes.Clone(a[:4*4096]), randomBlocks(2, 1)...)
	write(t, filepath.Join(dir, "c"), append(c, a[4*4096:]...))
	d, reqs := run(t, dir)

	want := []request{
		{loc{0, 0}, loc{1, 0}, 8*4096 + 4},             // b, its tail included
		{loc{0, 0}, loc{2, 0}, 4 * 4096},               // c before the new block
		{loc{0, 4 * 4096}, loc{2, 5 * 4096}, 4 * 4096}, // c after it
	}
	if len(reqs) != len(want) {
		t.Fatalf("requests %+v, want %+v", reqs, want)
	}
	for i := range want {
		if reqs[i] != want[i] {
			t.Errorf("request %d: %+v, want %+v", i, reqs[i], want[i])
		}
	}
	if d.stats.DupBytes != 16*4096+4 || d.stats.DedupedBytes != d.stats.DupBytes {
		t.Errorf("dup %d deduped %d", d.stats.DupBytes, d.stats.DedupedBytes)
	}
}

// Repeated blocks within one file never make a request whose source and
// destination overlap (the kernel refuses those).
func TestNoOverlapInOneFile(t *testing.T) {
	dir := t.TempDir()
	block := randomBlocks(3, 1)
	write(t, filepath.Join(dir, "same"), bytes.Repeat(block, 6))
	_, reqs := run(t, dir)
	for _, r := range reqs {
		if r.src.file == r.dst.file && r.src.off+r.n > r.dst.off {
			t.Errorf("overlapping request %+v", r)
		}
	}
	var shared int64
	for _, r := range reqs {
		shared += r.n
	}
	if shared != 5*4096 {
		t.Errorf("shared %d bytes of 5 repeated blocks", shared)
	}
}

// A dry run hashes and counts but shares nothing.
func TestDryRun(t *testing.T) {
	dir := t.TempDir()
	a := randomBlocks(4, 3)
	write(t, filepath.Join(dir, "a"), a)
	write(t, filepath.Join(dir, "b"), a)
	d := newDeduper(4096, true)
	d.share = func(src, dst loc, n int64) (int64, bool, error) {
		t.Fatal("a dry run shared blocks")
		return 0, false, nil
	}
	if err := datafiles.Walk(dir, d.file); err != nil {
		t.Fatal(err)
	}
	if d.stats.DupBytes != 3*4096 || d.stats.DataBytes != 6*4096 {
		t.Errorf("dup %d data %d", d.stats.DupBytes, d.stats.DataBytes)
	}
}
