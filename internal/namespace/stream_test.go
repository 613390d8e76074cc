package namespace_test

import (
	"bytes"
	"flag"
	"io"
	"log/slog"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/voltest"
	"github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

var streamSeed = flag.Uint64("stream.seed", 0, "seed for TestStreamingWritesModel (0: time-based)")

// TestStreamingWritesModel drives the background streaming commit hard (a
// 32 KiB threshold, small CDC chunks) with appends, overwrites inside and
// around the bytes in flight, reads, truncates and fsyncs, comparing every
// read with a reference byte slice, then checks the content after reopen.
func TestStreamingWritesModel(t *testing.T) {
	seed := *streamSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun: go test ./internal/namespace -run TestStreamingWritesModel -stream.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	if err := voltest.VolumeInit(dir, volume.InitOptions{Chunking: "cdc:1K:4K:16K"}); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	v, err := volume.OpenWith(dir, quiet, namespace.Options{StreamFlush: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { v.Close() }()
	fs := v.NS
	a, h, err := fs.Create(root, vfs.RootIno, "f", 0o644, syscall.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	var ref []byte
	// Writes go through Write or WriteFrom (a block export's connection
	// filling the buffer), some of the latter lost half-way: those must
	// change nothing.
	write := func(off int, p []byte) {
		var err error
		switch rng.IntN(6) {
		case 0:
			_, err = fs.WriteFrom(h, int64(off), len(p), func(dst []byte) error {
				copy(dst, p[:len(p)/2])
				return io.ErrUnexpectedEOF
			})
			if err != io.ErrUnexpectedEOF {
				t.Fatalf("seed %d: a lost WriteFrom at %d returned %v", seed, off, err)
			}
			return
		case 1, 2:
			_, err = fs.WriteFrom(h, int64(off), len(p), func(dst []byte) error {
				copy(dst, p)
				return nil
			})
		default:
			_, err = fs.Write(h, int64(off), p)
		}
		if err != nil {
			t.Fatalf("seed %d: write at %d: %v", seed, off, err)
		}
		if need := off + len(p); need > len(ref) {
			ref = append(ref, make([]byte, need-len(ref))...)
		}
		copy(ref[off:], p)
	}
	check := func(step int, off, n int) {
		buf := make([]byte, n)
		got, err := fs.Read(h, int64(off), buf)
		if err != nil {
			t.Fatalf("seed %d step %d: read: %v", seed, step, err)
		}
		want := ref[min(off, len(ref)):min(off+n, len(ref))]
		if !bytes.Equal(buf[:got], want) {
			t.Fatalf("seed %d step %d: read [%d,%d) differs from the reference", seed, step, off, off+n)
		}
	}
	randBytes := func(n int) []byte {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.IntN(4)) // low entropy: chunks repeat, dedup is exercised
		}
		return p
	}
	for step := 0; step < 3000; step++ {
		switch r := rng.IntN(100); {
		case r < 55: // append, the streaming case
			write(len(ref), randBytes(1+rng.IntN(20000)))
		case r < 75 && len(ref) > 0: // overwrite near the end, often in flight
			off := max(0, len(ref)-rng.IntN(80000))
			write(off, randBytes(1+rng.IntN(10000)))
		case r < 90 && len(ref) > 0:
			off := rng.IntN(len(ref))
			check(step, off, 1+rng.IntN(100000))
		case r < 94 && len(ref) > 0:
			size := rng.IntN(len(ref) + 1)
			if _, err := fs.SetAttr(root, a.Ino, vfs.SetAttr{SetSize: true, Size: int64(size)}); err != nil {
				t.Fatalf("seed %d: truncate: %v", seed, err)
			}
			ref = ref[:size]
		case r < 96:
			if err := fs.Fsync(h, false); err != nil {
				t.Fatalf("seed %d: fsync: %v", seed, err)
			}
		default:
			if got := testutil.Must(fs.GetAttr(a.Ino)).Size; got != int64(len(ref)) {
				t.Fatalf("seed %d step %d: size %d, want %d", seed, step, got, len(ref))
			}
		}
	}
	check(-1, 0, len(ref)+1)
	if err := fs.Release(h); err != nil {
		t.Fatal(err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	v, err = volume.Open(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, v.NS, a.Ino); !bytes.Equal(got, ref) {
		t.Fatalf("seed %d: after reopen the file (%d bytes) differs from the reference (%d bytes)", seed, len(got), len(ref))
	}
}
