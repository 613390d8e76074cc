package datafiles

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/doppelfs/doppel/internal/importer"
)

// Walk calls fn for every regular file below root, each inode once (hard
// links share their data). Symlinks are not followed.
func Walk(root string, fn func(path string) error) error {
	seen := map[[2]uint64]bool{}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			id := [2]uint64{uint64(st.Dev), st.Ino}
			if seen[id] {
				return nil
			}
			seen[id] = true
		}
		if err := fn(path); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
}

// File is an open regular file and its size when it was opened.
type File struct {
	*os.File
	Size int64
}

// Open opens the file at path for reading.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &File{File: f, Size: info.Size()}, nil
}

// Ranges calls fn for each data range [start, end) of f, in order.
func (f *File) Ranges(fn func(start, end int64) error) error {
	for off := int64(0); off < f.Size; {
		data, hole, err := importer.NextData(int(f.Fd()), off, f.Size)
		if err != nil {
			return err
		}
		if data >= f.Size {
			return nil
		}
		if err := fn(data, hole); err != nil {
			return err
		}
		off = hole
	}
	return nil
}
