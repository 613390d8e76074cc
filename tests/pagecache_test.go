package tests

import (
	"bytes"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestKeptPageCacheStaysCoherent: files open with the kernel's page cache
// kept across opens (FOPEN_KEEP_CACHE), so a reread after each kind of
// change must see the change, not the cached pages of the earlier read.
// Unlike the model test, nothing here drops the cache before reading.
func TestKeptPageCacheStaysCoherent(t *testing.T) {
	v := newVolume(t)
	p, q := v.path("f"), v.path("g")
	want := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	other := bytes.Repeat([]byte("ZYXWVUTSRQPONMLK"), 64<<10)
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(q, other, 0o644); err != nil {
		t.Fatal(err)
	}
	reread := func(what string) {
		t.Helper()
		got, err := os.ReadFile(p) // a new open each time
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Fatalf("after %s: read %d bytes, want %d; first difference at %d", what, len(got), len(want), i)
		}
	}
	reread("the first write")
	reread("a reread") // from the kept cache

	modify := func(what string, fn func(f *os.File) error) {
		t.Helper()
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := fn(f); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		reread(what)
	}
	modify("pwrite", func(f *os.File) error {
		copy(want[5000:], "written in the middle")
		_, err := f.WriteAt([]byte("written in the middle"), 5000)
		return err
	})
	modify("punching a hole", func(f *os.File) error {
		clear(want[64<<10 : 192<<10])
		return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 64<<10, 128<<10)
	})
	modify("copy_file_range from another file", func(f *os.File) error {
		src, err := os.Open(q)
		if err != nil {
			return err
		}
		defer src.Close()
		copy(want[300<<10:], other[:200<<10])
		roff, woff := int64(0), int64(300<<10)
		for n := 200 << 10; n > 0; {
			c, err := unix.CopyFileRange(int(src.Fd()), &roff, int(f.Fd()), &woff, n, 0)
			if err != nil {
				return err
			}
			n -= c
		}
		return nil
	})
	modify("truncating and growing again", func(f *os.File) error {
		if err := f.Truncate(100 << 10); err != nil {
			return err
		}
		clear(want[100<<10:])
		return f.Truncate(int64(len(want)))
	})
	if err := os.WriteFile(p, other[:4096], 0o644); err != nil { // O_TRUNC
		t.Fatal(err)
	}
	want = append([]byte(nil), other[:4096]...)
	reread("rewriting with O_TRUNC")
	if err := os.Rename(q, p); err != nil { // a replacing rename: another inode
		t.Fatal(err)
	}
	want = other
	reread("a rename over the file")
}
