package tests

import (
	"bytes"
	"os"
	"testing"
	"unsafe"

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

// TestWriteOnlyHandleKeepsOthersCoherent: a handle open for writing only
// writes around the page cache (FOPEN_DIRECT_IO), so the pages another
// handle read and mapped before must not show the old bytes afterwards,
// while both handles stay open.
func TestWriteOnlyHandleKeepsOthersCoherent(t *testing.T) {
	v := newVolume(t)
	p := v.path("f")
	want := bytes.Repeat([]byte("0123456789abcdef"), 16<<10) // 256 KiB
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	r, mem := openMapped(t, p, len(want))
	check := func(what string) {
		t.Helper()
		got := make([]byte, len(want))
		if _, err := r.ReadAt(got, 0); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("after %s: read(2) of the reader's handle differs at %d", what, firstDifference(got, want))
		}
		if !bytes.Equal(mem, want) {
			t.Fatalf("after %s: the reader's mapping differs at %d", what, firstDifference(mem, want))
		}
	}
	check("the first write") // now cached and mapped

	w, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	patch := bytes.Repeat([]byte("W"), 10000)
	if _, err := w.WriteAt(patch, 3*4096+100); err != nil { // across page boundaries
		t.Fatal(err)
	}
	copy(want[3*4096+100:], patch)
	check("a write through a write-only handle")

	grown := bytes.Repeat([]byte("G"), 5000)
	if _, err := w.WriteAt(grown, int64(len(want))); err != nil { // past the end
		t.Fatal(err)
	}
	if fi, err := r.Stat(); err != nil {
		t.Fatal(err)
	} else if fi.Size() != int64(len(want)+len(grown)) {
		t.Fatalf("size after appending through the write-only handle: %d, want %d", fi.Size(), len(want)+len(grown))
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if want = append(want, grown...); !bytes.Equal(got, want) {
		t.Fatalf("a new open after appending differs at %d", firstDifference(got, want))
	}

	// O_APPEND through write-only handles (a log): each write lands at
	// the end the kernel knows, also after another handle's write.
	a, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, line := range []string{"first line\n", "second line\n"} {
		if _, err := a.WriteString(line); err != nil {
			t.Fatal(err)
		}
		want = append(want, line...)
		if _, err := w.WriteAt([]byte("x"), int64(len(want))); err != nil { // the other handle grows it by one
			t.Fatal(err)
		}
		want = append(want, 'x')
	}
	if got, err = os.ReadFile(p); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("after appending: %d bytes, want %d; first difference at %d", len(got), len(want), firstDifference(got, want))
	}
}

// TestWriteOnlyHandleWritesAroundPageCache: what a handle open for
// writing only writes does not stay in the kernel's page cache (the
// writer's copy into it is what FOPEN_DIRECT_IO saves), while what a
// read-write handle writes does.
func TestWriteOnlyHandleWritesAroundPageCache(t *testing.T) {
	v := newVolume(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	resident := func(name string, flag int) int {
		t.Helper()
		p := v.path(name)
		f, err := os.OpenFile(p, flag|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		_, mem := openMapped(t, p, len(data)) // before the writer's close, so nothing is dropped for a new mtime
		vec := make([]byte, len(data)/os.Getpagesize())
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
			t.Fatal(errno)
		}
		n := 0
		for _, b := range vec {
			n += int(b & 1)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := resident("rw", os.O_RDWR); n == 0 {
		t.Fatalf("no page of a file written through a read-write handle is cached: the test cannot tell")
	}
	if n := resident("wo", os.O_WRONLY); n != 0 {
		t.Errorf("%d of %d pages written through a write-only handle are in the page cache, want none", n, len(data)/os.Getpagesize())
	}
}

// openMapped opens p for reading and maps its first n bytes shared; both
// are undone when the test ends.
func openMapped(t *testing.T, p string, n int) (*os.File, []byte) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	mem, err := unix.Mmap(int(f.Fd()), 0, n, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	return f, mem
}
