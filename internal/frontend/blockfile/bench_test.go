package blockfile_test

import (
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/frontend/blockfile"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

// BenchmarkSequentialWrite writes 1 MiB requests of random data in order
// to an exported file and flushes at the end, as fio's sequential write
// job does over NBD, with the export's fixed 4 KiB blocks and with the
// volume's default (content-defined) chunking for comparison.
func BenchmarkSequentialWrite(b *testing.B) {
	for _, policy := range []string{"fixed:4K", ""} {
		name := policy
		if name == "" {
			name = "default"
		}
		b.Run(name, func(b *testing.B) {
			f := newExport(b, policy)
			rng := rand.NewChaCha8([32]byte{1})
			buf := make([]byte, 1<<20)
			b.SetBytes(int64(len(buf)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				rng.Read(buf) // fresh data: no block dedups
				b.StartTimer()
				testutil.Check(b, f.WriteAt(buf, int64(i)<<20, false))
			}
			testutil.Check(b, f.Flush())
		})
	}
}

// BenchmarkSequentialRead reads an exported file of fixed 4 KiB blocks,
// written sequentially and flushed beforehand, in 1 MiB requests in order,
// as fio's sequential read job does over NBD.
func BenchmarkSequentialRead(b *testing.B) {
	const size = 256 << 20
	f := writtenExport(b, size, 2)
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.ReadAt(buf, int64(i)<<20%size); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRandomRead reads 4 KiB blocks at random offsets of an exported
// file of fixed 4 KiB blocks, written and flushed beforehand, one at a
// time, as fio's random read job at iodepth 1 does over NBD.
func BenchmarkRandomRead(b *testing.B) {
	const size = 256 << 20
	f := writtenExport(b, size, 3)
	offsets := rand.New(rand.NewPCG(3, 4))
	block := make([]byte, 4<<10)
	b.SetBytes(int64(len(block)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.ReadAt(block, offsets.Int64N(size/int64(len(block)))*int64(len(block))); err != nil {
			b.Fatal(err)
		}
	}
}

// writtenExport is a fresh export of fixed 4 KiB blocks holding size
// bytes of random data (from seed), written in 1 MiB requests and flushed.
func writtenExport(b *testing.B, size int64, seed byte) *blockfile.File {
	f := newExport(b, "fixed:4K")
	rng := rand.NewChaCha8([32]byte{seed})
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(buf)) {
		rng.Read(buf)
		testutil.Check(b, f.WriteAt(buf, off, false))
	}
	testutil.Check(b, f.Flush())
	return f
}

// newExport opens a fresh volume holding one empty file cut by policy
// ("": the volume's default) and opens the file as an export; both are
// closed when the benchmark ends.
func newExport(b *testing.B, policy string) *blockfile.File {
	dir := filepath.Join(b.TempDir(), "store")
	testutil.Check(b, volume.Init(dir, volume.InitOptions{}))
	v, err := volume.Open(dir, slog.New(slog.DiscardHandler))
	testutil.Check(b, err)
	b.Cleanup(func() { v.Close() })
	a, h, err := v.NS.Create(vfs.Caller{}, vfs.RootIno, "disk.img", 0o644, syscall.O_RDWR)
	testutil.Check(b, err)
	if policy != "" {
		testutil.Check(b, v.NS.SetXattr(a.Ino, vfs.ChunkingXattr, []byte(policy), 0))
	}
	testutil.Check(b, v.NS.Release(h))
	f, err := blockfile.Open(v.NS, a.Ino, false, nil)
	testutil.Check(b, err)
	b.Cleanup(func() { f.Close() })
	return f
}
