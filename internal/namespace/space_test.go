package namespace_test

import (
	"io"
	"log/slog"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/headroom"
	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/voltest"
	"github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

// TestFullDiskRules plays a host file system whose free space the test
// sets, and checks what the reserve kept for metadata allows.
func TestFullDiskRules(t *testing.T) {
	dir := t.TempDir()
	if err := voltest.VolumeInit(dir, volume.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	free := int64(1 << 40)
	room := headroom.WithFree(func() (int64, error) { return free, nil }, nil)
	vol, err := volume.OpenWith(dir, slog.New(slog.NewTextHandler(io.Discard, nil)), namespace.Options{Headroom: room})
	if err != nil {
		t.Fatal(err)
	}
	defer vol.Close()
	fs := vol.NS
	reserve := room.Reserve()
	data := func(seed uint64) []byte {
		b := make([]byte, 100<<10)
		rand.NewChaCha8([32]byte{byte(seed)}).Read(b)
		return b
	}
	kept := writeFile(t, fs, vfs.RootIno, "kept", data(1))

	// New data may not eat into the reserve; bytes still buffered count.
	free = reserve + 150<<10
	a, h, err := fs.Create(root, vfs.RootIno, "a", 0o644, syscall.O_WRONLY)
	if err != nil {
		t.Fatalf("create with room for metadata: %v", err)
	}
	if _, err := fs.Write(h, 0, data(2)); err != nil {
		t.Fatalf("write that fits: %v", err)
	}
	_, err = fs.Write(h, 100<<10, data(3))
	wantErr(t, err, syscall.ENOSPC)
	if err := fs.Flush(h); err != nil {
		t.Fatalf("close after a refused write: %v", err)
	}
	if err := fs.Release(h); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fs, a.Ino); string(got) != string(data(2)) {
		t.Fatal("the write that was accepted before ENOSPC is not all there")
	}

	// A flush that fails (the disk filled meanwhile) reports ENOSPC at
	// close; the last release drops the buffer and its accounting.
	free = 1 << 40
	b, h, err := fs.Create(root, vfs.RootIno, "b", 0o644, syscall.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Must(fs.Write(h, 0, data(4)))
	free = reserve
	wantErr(t, fs.Flush(h), syscall.ENOSPC)
	fs.Release(h)
	if a := testutil.Must(fs.GetAttr(b.Ino)); a.Size != 0 {
		t.Errorf("file whose only flush failed has size %d, want 0", a.Size)
	}
	free = reserve + 150<<10 // room for 100K only if nothing stays counted
	writeFile(t, fs, vfs.RootIno, "c", data(5))

	// Below half the reserve only what frees space goes on.
	free = reserve/2 - 1
	_, _, err = fs.Create(root, vfs.RootIno, "d", 0o644, syscall.O_WRONLY)
	wantErr(t, err, syscall.ENOSPC)
	_, err = fs.Mkdir(root, vfs.RootIno, "dir", 0o755)
	wantErr(t, err, syscall.ENOSPC)
	_, err = fs.Symlink(root, vfs.RootIno, "sym", "kept")
	wantErr(t, err, syscall.ENOSPC)
	_, err = fs.Link(kept, vfs.RootIno, "link")
	wantErr(t, err, syscall.ENOSPC)
	wantErr(t, fs.SetXattr(kept, "user.x", []byte("v"), 0), syscall.ENOSPC)
	if err := fs.Rename(vfs.RootIno, "c", vfs.RootIno, "c2", 0); err != nil {
		t.Errorf("rename on a full disk: %v", err)
	}
	if _, err := fs.SetAttr(root, a.Ino, vfs.SetAttr{SetSize: true, Size: 10}); err != nil {
		t.Errorf("truncate on a full disk: %v", err)
	}
	for _, name := range []string{"a", "b", "c2"} {
		if err := fs.Unlink(vfs.RootIno, name); err != nil {
			t.Errorf("unlink %s on a full disk: %v", name, err)
		}
	}
	if got := readFile(t, fs, kept); string(got) != string(data(1)) {
		t.Error("a file stored before the disk filled reads wrong")
	}
}
