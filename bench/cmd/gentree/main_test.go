package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestGenerateLayoutAndDeterminism(t *testing.T) {
	s := spec{dir: filepath.Join(t.TempDir(), "a"), files: 25, perDir: 10, minSize: 5, maxSz: 50, seed: 7}
	sum, err := generate(s)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files != 25 || sum.Dirs != 3 {
		t.Fatalf("got %+v, want 25 files in 3 directories", sum)
	}
	ents, err := os.ReadDir(filepath.Join(s.dir, "d0002"))
	if err != nil || len(ents) != 5 {
		t.Fatalf("last directory: %d entries, err %v; want 5", len(ents), err)
	}
	var total int64
	seen := map[string]bool{}
	err = filepath.WalkDir(s.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if len(b) < 5 || len(b) > 50 {
			t.Errorf("%s: %d bytes, outside [5, 50]", p, len(b))
		}
		if seen[string(b)] {
			t.Errorf("%s: same content as another file", p)
		}
		seen[string(b)] = true
		total += int64(len(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total != sum.Bytes {
		t.Errorf("files hold %d bytes, summary says %d", total, sum.Bytes)
	}

	again := s
	again.dir = filepath.Join(t.TempDir(), "b")
	if _, err := generate(again); err != nil {
		t.Fatal(err)
	}
	x, _ := os.ReadFile(filepath.Join(s.dir, "d0001", "f00003"))
	y, _ := os.ReadFile(filepath.Join(again.dir, "d0001", "f00003"))
	if len(x) == 0 || !bytes.Equal(x, y) {
		t.Error("the same flags gave different contents")
	}
	if _, err := generate(s); err == nil {
		t.Error("generating into an existing directory did not fail")
	}
}
