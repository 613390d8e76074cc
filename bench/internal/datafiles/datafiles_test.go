package datafiles

import (
	"os"
	"path/filepath"
	"testing"
)

// A hard link is visited once; a file with a hole in the middle has two
// data ranges around it (on file systems with SEEK_HOLE; without it, one
// range covering everything is also correct).
func TestWalkAndRanges(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sparse")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 1<<20)
	block[0] = 1
	for _, off := range []int64{0, 64 << 20} {
		if _, err := f.WriteAt(block, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}

	var visited []string
	var ranges [][2]int64
	err = Walk(dir, func(p string) error {
		visited = append(visited, filepath.Base(p))
		df, err := Open(p)
		if err != nil {
			return err
		}
		defer df.Close()
		return df.Ranges(func(start, end int64) error {
			ranges = append(ranges, [2]int64{start, end})
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(visited) != 1 {
		t.Fatalf("visited %v, want the inode once", visited)
	}
	size := int64(65 << 20)
	var covered int64
	for _, r := range ranges {
		if r[0] < 0 || r[1] > size || r[0] >= r[1] {
			t.Fatalf("bad range %v", r)
		}
		covered += r[1] - r[0]
	}
	switch {
	case len(ranges) == 1 && covered == size: // no hole support
	case len(ranges) == 2 && ranges[0][0] == 0 && ranges[1][1] == size && covered < size/2:
	default:
		t.Errorf("ranges %v of a 65 MiB file with data at 0 and 64 MiB", ranges)
	}
}
