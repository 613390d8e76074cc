package blockfile_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/frontend/blockfile"
	"github.com/doppelfs/doppel/internal/frontend/nbd"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

const mib = 1 << 20

// openFile makes a volume with one 16 MiB sparse file cut in fixed 4 KiB
// blocks and opens it as a block device.
func openFile(t *testing.T, changed blockfile.Changed) (*volume.Volume, *blockfile.File) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	testutil.Check(t, volume.Init(dir, volume.InitOptions{}))
	v, err := volume.Open(dir, slog.New(slog.DiscardHandler))
	testutil.Check(t, err)
	t.Cleanup(func() { v.Close() })
	a, h, err := v.NS.Create(vfs.Caller{}, vfs.RootIno, "disk.img", 0o644, syscall.O_RDWR)
	testutil.Check(t, err)
	testutil.Check(t, v.NS.SetXattr(a.Ino, vfs.ChunkingXattr, []byte("fixed:4K"), 0))
	_, err = v.NS.SetAttr(vfs.Caller{}, a.Ino, vfs.SetAttr{SetSize: true, Size: 16 * mib})
	testutil.Check(t, err)
	testutil.Check(t, v.NS.Release(h))
	f, err := blockfile.Open(v.NS, a.Ino, false, changed)
	testutil.Check(t, err)
	return v, f
}

// wantStatus checks the block status of the disk's 16 MiB, as a client
// connected at the start sees them, whatever the file's size now.
func wantStatus(t *testing.T, f *blockfile.File, want string) {
	t.Helper()
	ext, err := f.BlockStatus(0, 16*mib)
	testutil.Check(t, err)
	if got := fmt.Sprint(ext); got != want {
		t.Fatalf("block status %s, want %s", got, want)
	}
}

// TestPurge checks the three ways a block device frees space, on a real
// volume: an all-zero write stores nothing, TRIM and WRITE_ZEROES (with
// NO_HOLE too) drop the chunks of their range, and block status reports
// the holes each leaves.
func TestPurge(t *testing.T) {
	var changes []string
	v, f := openFile(t, func(ino uint64, off, length int64) { changes = append(changes, fmt.Sprint(off, "+", length)) })
	if f.Size() != 16*mib {
		t.Fatalf("size %d", f.Size())
	}
	hole := nbd.ExtentHole | nbd.ExtentZero
	wantStatus(t, f, fmt.Sprintf("[{%d %d}]", 16*mib, hole))

	data := testutil.SeededBytes(1, 4*mib)
	testutil.Check(t, f.WriteAt(data, 0, true))
	chunks := v.Engine.Stats().Stored()
	if chunks != 4*mib/4096 {
		t.Fatalf("4 MiB of distinct data: %d chunks", chunks)
	}
	testutil.Check(t, f.WriteAt(make([]byte, 2*mib), 8*mib, true))
	if n := v.Engine.Stats().Stored(); n != chunks {
		t.Fatalf("an all-zero write stored %d chunks", n-chunks)
	}
	// Zeros over data free it too, as an overwrite.
	testutil.Check(t, f.WriteAt(make([]byte, mib), 0, false))
	testutil.Check(t, f.Flush())
	testutil.Check(t, f.Trim(mib, mib))
	testutil.Check(t, f.Zero(2*mib, 512<<10, false))
	testutil.Check(t, f.Zero(2*mib+512<<10, 512<<10, true))
	if n := v.Engine.Stats().Stored(); n != mib/4096 {
		t.Fatalf("after zeroing 3 of 4 MiB: %d chunks, want %d", n, mib/4096)
	}
	wantStatus(t, f, fmt.Sprintf("[{%d %d} {%d 0} {%d %d}]", 3*mib, hole, mib, 12*mib, hole))

	got := make([]byte, 5*mib)
	n, err := f.ReadAt(got, 0)
	testutil.Check(t, err)
	want := append(make([]byte, 3*mib), data[3*mib:]...)
	if n != len(got) || !bytes.Equal(got[:4*mib], want) || !bytes.Equal(got[4*mib:], make([]byte, mib)) {
		t.Fatal("read back differs")
	}
	if len(changes) != 6 || changes[3] != fmt.Sprint(mib, "+", mib) {
		t.Fatalf("changed ranges %v", changes)
	}

	// A file shortened under the export reads as zeros past its end.
	_, err = v.NS.SetAttr(vfs.Caller{}, f.Ino(), vfs.SetAttr{SetSize: true, Size: 3*mib + 4096})
	testutil.Check(t, err)
	n, err = f.ReadAt(got[:2*mib], 3*mib)
	testutil.Check(t, err)
	if n != 2*mib || !bytes.Equal(got[:4096], data[3*mib:3*mib+4096]) || !bytes.Equal(got[4096:2*mib], make([]byte, 2*mib-4096)) {
		t.Fatal("read across the shortened end")
	}
	wantStatus(t, f, fmt.Sprintf("[{%d %d} {%d 0} {%d %d}]", 3*mib, hole, 4096, 13*mib-4096, hole))
	testutil.Check(t, f.Close())
}

// TestReadPastShorteningWithBufferedWrites: a file shortened while writes
// to it (some past the new end) are still buffered reads as zeros past its
// new end, before and after the buffer commits.
func TestReadPastShorteningWithBufferedWrites(t *testing.T) {
	v, f := openFile(t, nil)
	data := testutil.SeededBytes(2, 2*mib)
	testutil.Check(t, f.WriteAt(data, 0, true)) // committed extents
	testutil.Check(t, f.WriteAt(data[:4096], 4*mib, false))
	_, err := v.NS.SetAttr(vfs.Caller{}, f.Ino(), vfs.SetAttr{SetSize: true, Size: mib})
	testutil.Check(t, err)
	for _, flush := range []bool{false, true} {
		got := make([]byte, 2*mib)
		n, err := f.ReadAt(got, 0)
		testutil.Check(t, err)
		if n != len(got) || !bytes.Equal(got[:mib], data[:mib]) || !bytes.Equal(got[mib:], make([]byte, mib)) {
			t.Fatalf("flushed %v: read across the shortened end returned stale bytes", flush)
		}
		testutil.Check(t, f.Flush())
	}
	testutil.Check(t, f.Close())
}

// TestSizeFollowsTheFile: a file grown or shortened through the volume
// is exported at its new size to the clients that connect after.
func TestSizeFollowsTheFile(t *testing.T) {
	v, f := openFile(t, nil)
	for _, size := range []int64{40 * mib, 3*mib + 512, 16 * mib} {
		_, err := v.NS.SetAttr(vfs.Caller{}, f.Ino(), vfs.SetAttr{SetSize: true, Size: size})
		testutil.Check(t, err)
		if got := f.Size(); got != size {
			t.Fatalf("export size %d after truncating the file to %d", got, size)
		}
	}
	testutil.Check(t, f.Close())
}

// TestBlockStatusOfParts: block status over parts of a disk, inside data,
// across its end into a hole, inside the hole, answers for that part only.
func TestBlockStatusOfParts(t *testing.T) {
	_, f := openFile(t, nil)
	testutil.Check(t, f.WriteAt(testutil.SeededBytes(2, 4*mib), 0, true))
	hole := nbd.ExtentHole | nbd.ExtentZero
	for _, tc := range []struct {
		off, length int64
		want        string
	}{
		{mib, 64 << 10, fmt.Sprintf("[{%d 0}]", 64<<10)},
		{3 * mib, 2 * mib, fmt.Sprintf("[{%d 0} {%d %d}]", mib, mib, hole)},
		{5 * mib, 4096, fmt.Sprintf("[{4096 %d}]", hole)},
		{0, 16 * mib, fmt.Sprintf("[{%d 0} {%d %d}]", 4*mib, 12*mib, hole)},
	} {
		ext, err := f.BlockStatus(tc.off, tc.length)
		testutil.Check(t, err)
		if got := fmt.Sprint(ext); got != tc.want {
			t.Errorf("block status of [%d, +%d): %s, want %s", tc.off, tc.length, got, tc.want)
		}
	}
	testutil.Check(t, f.Close())
}
