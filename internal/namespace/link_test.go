package namespace_test

import (
	"io"
	"log/slog"
	"sync"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/voltest"
	"github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

// TestLinkWhileWriting makes hard links to a file while it is written and
// flushed. Link once waited for the file's lock inside its transaction,
// while the writer, holding that lock, waited for the transaction lock: a
// deadlock, which makes this test hang.
func TestLinkWhileWriting(t *testing.T) {
	dir := t.TempDir()
	if err := voltest.VolumeInit(dir, volume.InitOptions{Chunking: "fixed:4K"}); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	v, err := volume.OpenWith(dir, quiet, namespace.Options{StreamFlush: 16 << 10, DirtyLimit: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	fs := v.NS
	a, h, err := fs.Create(root, vfs.RootIno, "f", 0o644, syscall.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		block := make([]byte, 8<<10)
		for i := range 2000 {
			block[0] = byte(i)
			if _, err := fs.Write(h, int64(i)*int64(len(block)), block); err != nil {
				t.Errorf("write: %v", err)
				return
			}
		}
	}()
	for range 500 {
		if _, err := fs.Link(a.Ino, vfs.RootIno, "g"); err != nil {
			t.Fatalf("link: %v", err)
		}
		if err := fs.Unlink(vfs.RootIno, "g"); err != nil {
			t.Fatalf("unlink: %v", err)
		}
	}
	wg.Wait()
	if err := fs.Release(h); err != nil {
		t.Fatal(err)
	}
	if got := testutil.Must(fs.GetAttr(a.Ino)); got.Size != 2000*8<<10 || got.Nlink != 1 {
		t.Errorf("after the writes: size %d nlink %d, want %d and 1", got.Size, got.Nlink, 2000*8<<10)
	}
}
