package namespace_test

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
)

// BenchmarkSmallFile is the namespace's share of a small file's life as
// the kernel drives it (postmark, an untar, the create/stat/unlink
// workloads of the issue-4 suite), without the FUSE round trips: a
// lookup of the missing name, create, a 1 KiB write, the flush at close,
// release; then a lookup and an unlink. Distinct contents, so every file
// stores a new chunk.
func BenchmarkSmallFile(b *testing.B) {
	v, _ := openVolume(b)
	benchSmallFiles(b, v.NS, testutil.Must(v.NS.Mkdir(root, vfs.RootIno, "d", 0o755)).Ino)
}

// BenchmarkSmallFileInClone is BenchmarkSmallFile four directories deep
// in a clone: every change is journaled in the clone's journal too.
func BenchmarkSmallFileInClone(b *testing.B) {
	v, _ := openVolume(b)
	fs := v.NS
	dir := uint64(vfs.RootIno)
	for _, name := range []string{"a", "b", "c", "d"} {
		dir = testutil.Must(fs.Mkdir(root, dir, name, 0o755)).Ino
	}
	a := testutil.Must(fs.Lookup(vfs.RootIno, "a")).Ino
	dir = testutil.Must(fs.Clone(a, vfs.RootIno, "clone", namespace.CloneOptions{})).Ino
	for _, name := range []string{"b", "c", "d"} {
		dir = testutil.Must(fs.Lookup(dir, name)).Ino
	}
	benchSmallFiles(b, fs, dir)
}

func benchSmallFiles(b *testing.B, fs *namespace.FS, dir uint64) {
	data := make([]byte, 1024)
	var names []string // created, not yet unlinked
	b.Run("create", func(b *testing.B) {
		for range b.N {
			name := fmt.Sprint("f", len(names))
			names = append(names, name)
			fs.Lookup(dir, name)
			_, h, err := fs.Create(root, dir, name, 0o644, syscall.O_WRONLY)
			if err != nil {
				b.Fatal(err)
			}
			copy(data, name)
			testutil.Must(fs.Write(h, 0, data))
			if err := fs.Flush(h); err != nil {
				b.Fatal(err)
			}
			if err := fs.Release(h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unlink", func(b *testing.B) {
		if b.N > len(names) {
			b.Skipf("%d files to unlink, fewer than %d iterations: give -benchtime as a count (Nx)", len(names), b.N)
		}
		for _, name := range names[len(names)-b.N:] {
			if _, err := fs.Lookup(dir, name); err != nil {
				b.Fatal(err)
			}
			if err := fs.Unlink(dir, name); err != nil {
				b.Fatal(err)
			}
		}
		names = names[:len(names)-b.N]
	})
}
