package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestKernelsUpToDate fails when blake3_amd64.s is not what this
// generator writes: edit the generator, then run go generate.
func TestKernelsUpToDate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "blake3_amd64.s")
	if err := write(path); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../blake3_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("internal/blockhash/blake3_amd64.s is stale: run go generate ./internal/blockhash")
	}
}
