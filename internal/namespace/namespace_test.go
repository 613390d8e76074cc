package namespace_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/voltest"
	"github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

func openVolume(t testing.TB) (*volume.Volume, string) {
	t.Helper()
	return openVolumeWith(t, volume.InitOptions{})
}

// openVolumeWith is openVolume for a volume made with opt.
func openVolumeWith(t testing.TB, opt volume.InitOptions) (*volume.Volume, string) {
	t.Helper()
	dir := t.TempDir()
	if err := voltest.VolumeInit(dir, opt); err != nil {
		t.Fatal(err)
	}
	v, err := volume.Open(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v, dir
}

func reopen(t *testing.T, v *volume.Volume, dir string) *volume.Volume {
	t.Helper()
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	nv, err := volume.Open(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nv.Close() })
	return nv
}

var root = vfs.Caller{}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %v", err, want)
	}
}

func writeFile(t *testing.T, fs vfs.FS, parent uint64, name string, data []byte) uint64 {
	t.Helper()
	a, h, err := fs.Create(root, parent, name, 0o644, syscall.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Write(h, 0, data); err != nil {
		t.Fatal(err)
	}
	if err := fs.Release(h); err != nil {
		t.Fatal(err)
	}
	return a.Ino
}

func readFile(t *testing.T, fs vfs.FS, ino uint64) []byte {
	t.Helper()
	a := testutil.Must(fs.GetAttr(ino))
	h := testutil.Must(fs.Open(ino, syscall.O_RDONLY))
	defer fs.Release(h)
	buf := make([]byte, a.Size+10)
	n := testutil.Must(fs.Read(h, 0, buf))
	return buf[:n]
}

func TestRenameRules(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	d1 := testutil.Must(fs.Mkdir(root, vfs.RootIno, "d1", 0o755)).Ino
	d2 := testutil.Must(fs.Mkdir(root, d1, "d2", 0o755)).Ino
	f := writeFile(t, fs, vfs.RootIno, "f", []byte("x"))
	g := writeFile(t, fs, vfs.RootIno, "g", []byte("y"))

	wantErr(t, fs.Rename(vfs.RootIno, "d1", d2, "inside", 0), syscall.EINVAL)
	wantErr(t, fs.Rename(vfs.RootIno, "f", vfs.RootIno, "d1", 0), syscall.EISDIR)
	wantErr(t, fs.Rename(vfs.RootIno, "d1", vfs.RootIno, "f", 0), syscall.ENOTDIR)
	wantErr(t, fs.Rename(vfs.RootIno, "f", vfs.RootIno, "g", vfs.RenameNoReplace), syscall.EEXIST)
	wantErr(t, fs.Rename(vfs.RootIno, "f", vfs.RootIno, "none", vfs.RenameExchange), syscall.ENOENT)

	if err := fs.Rename(vfs.RootIno, "f", vfs.RootIno, "g", vfs.RenameExchange); err != nil {
		t.Fatal(err)
	}
	if a := testutil.Must(fs.Lookup(vfs.RootIno, "g")); a.Ino != f {
		t.Fatalf("after exchange g is %d, want %d", a.Ino, f)
	}
	// Exchanging a directory with a file in another directory moves a ".." link.
	rootLinks := testutil.Must(fs.GetAttr(vfs.RootIno)).Nlink
	if err := fs.Rename(vfs.RootIno, "g", d1, "d2", vfs.RenameExchange); err != nil {
		t.Fatal(err)
	}
	if got := testutil.Must(fs.GetAttr(vfs.RootIno)).Nlink; got != rootLinks+1 {
		t.Fatalf("root nlink %d, want %d", got, rootLinks+1)
	}
	if got := testutil.Must(fs.GetAttr(d1)).Nlink; got != 2 {
		t.Fatalf("d1 nlink %d, want 2", got)
	}
	// Replacing a file drops its inode.
	if err := fs.Rename(d1, "d2", vfs.RootIno, "f", 0); err != nil {
		t.Fatal(err)
	}
	_, err := fs.GetAttr(g)
	wantErr(t, err, syscall.ENOENT)
	// "g" is the directory d2 now: it cannot replace the file "f".
	wantErr(t, fs.Rename(vfs.RootIno, "g", vfs.RootIno, "f", 0), syscall.ENOTDIR)
}

// openUnlinked creates "f" holding "hello world", unlinks it while it is
// open, and returns its inode (nlink 0) and the open handle.
func openUnlinked(t *testing.T, fs *namespace.FS) (uint64, vfs.Handle) {
	t.Helper()
	a, h, err := fs.Create(root, vfs.RootIno, "f", 0o644, syscall.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Must(fs.Write(h, 0, []byte("hello world")))
	if err := fs.Unlink(vfs.RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	if got := testutil.Must(fs.GetAttr(a.Ino)).Nlink; got != 0 {
		t.Fatalf("nlink %d after the unlink, want 0", got)
	}
	return a.Ino, h
}

func TestOpenUnlinkedFileSurvivesUntilRelease(t *testing.T) {
	v, dir := openVolume(t)
	fs := v.NS
	ino, h := openUnlinked(t, fs)
	buf := make([]byte, 5)
	testutil.Must(fs.Read(h, 6, buf))
	if string(buf) != "world" {
		t.Fatalf("read %q from unlinked file", buf)
	}
	// A daemon stop with the file open leaves an orphan that the next open removes.
	v = reopen(t, v, dir)
	_, err := v.NS.GetAttr(ino)
	wantErr(t, err, syscall.ENOENT)
	if s := v.Engine.Stats(); s.Chunks != 0 || s.LogicalBytes != 0 {
		t.Fatalf("orphan's data not freed: %+v", s)
	}
}

// TestOrphanRemovedOnce: the orphan reaper lists orphans outside its
// transactions, and with several hosts every host's reaper lists the
// same ones. An orphan deleted since it was listed (here by its last
// close; there by another host) is passed over: deleting it again failed
// with ENOENT, which stopped the sweep.
func TestOrphanRemovedOnce(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	ino, h := openUnlinked(t, fs)
	if err := fs.RemoveOrphan(ino); err != nil { // open: it stays
		t.Fatal(err)
	}
	if got := testutil.Must(fs.GetAttr(ino)).Nlink; got != 0 {
		t.Fatalf("nlink %d, want 0", got)
	}
	if err := fs.Release(h); err != nil { // the last close deletes it
		t.Fatal(err)
	}
	if err := fs.RemoveOrphan(ino); err != nil { // a list read before
		t.Fatal(err)
	}
	wantFsckClean(t, v)
}

func TestBufferedWritesShowInAttrsAndPersist(t *testing.T) {
	v, dir := openVolume(t)
	fs := v.NS
	a, h, err := fs.Create(root, vfs.RootIno, "f", 0o644, syscall.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("abcdefgh"), 100000)
	testutil.Must(fs.Write(h, 0, data))
	if got := testutil.Must(fs.GetAttr(a.Ino)).Size; got != int64(len(data)) {
		t.Fatalf("size %d while buffered, want %d", got, len(data))
	}
	// chmod while data is buffered must not lose the buffered size.
	testutil.Must(fs.SetAttr(root, a.Ino, vfs.SetAttr{SetMode: true, Mode: 0o600}))
	if err := fs.Release(h); err != nil {
		t.Fatal(err)
	}
	v = reopen(t, v, dir)
	got := readFile(t, v.NS, a.Ino)
	if !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, want %d identical", len(got), len(data))
	}
	if m := testutil.Must(v.NS.GetAttr(a.Ino)).Mode & 0o777; m != 0o600 {
		t.Fatalf("mode %o, want 600", m)
	}
}

func TestCopyFileRangeSharesChunks(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	data := make([]byte, 3<<20)
	for i := range data {
		data[i] = byte(i * 7 / 13)
	}
	src := writeFile(t, fs, vfs.RootIno, "src", data)
	before := v.Engine.Stats()
	hs := testutil.Must(fs.Open(src, syscall.O_RDONLY))
	da, hd, err := fs.Create(root, vfs.RootIno, "dst", 0o644, syscall.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	n := testutil.Must(fs.CopyFileRange(hs, 1000, hd, 5, int64(len(data))))
	if n != int64(len(data)-1000) {
		t.Fatalf("copied %d, want %d", n, len(data)-1000)
	}
	fs.Release(hs)
	fs.Release(hd)
	after := v.Engine.Stats()
	if after.PhysicalBytes != before.PhysicalBytes {
		t.Fatalf("copy stored data: physical %d -> %d", before.PhysicalBytes, after.PhysicalBytes)
	}
	got := readFile(t, fs, da.Ino)
	want := append(make([]byte, 5), data[1000:]...)
	if !bytes.Equal(got, want) {
		t.Fatal("copied content differs")
	}
}

func TestDirectoryErrors(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	d := testutil.Must(fs.Mkdir(root, vfs.RootIno, "d", 0o755)).Ino
	writeFile(t, fs, d, "f", []byte("x"))
	wantErr(t, fs.Rmdir(vfs.RootIno, "d"), syscall.ENOTEMPTY)
	wantErr(t, fs.Unlink(vfs.RootIno, "d"), syscall.EISDIR)
	wantErr(t, fs.Rmdir(d, "f"), syscall.ENOTDIR)
	_, err := fs.Mkdir(root, vfs.RootIno, "d", 0o755)
	wantErr(t, err, syscall.EEXIST)
	_, err = fs.Link(d, vfs.RootIno, "dl")
	wantErr(t, err, syscall.EPERM)
	long := string(bytes.Repeat([]byte("n"), 256))
	_, err = fs.Mkdir(root, vfs.RootIno, long, 0o755)
	wantErr(t, err, syscall.ENAMETOOLONG)
	wantErr(t, fs.SetXattr(d, "user.x", []byte("1"), vfs.XattrReplace), syscall.ENODATA)
	if err := fs.SetXattr(d, "user.x", []byte("1"), vfs.XattrCreate); err != nil {
		t.Fatal(err)
	}
	wantErr(t, fs.SetXattr(d, "user.x", []byte("1"), vfs.XattrCreate), syscall.EEXIST)
}

func TestChunkingPolicyOverrideIsInherited(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	d := testutil.Must(fs.Mkdir(root, vfs.RootIno, "images", 0o755)).Ino
	wantErr(t, fs.SetXattr(d, "user.doppel.chunking", []byte("fixed:3K"), 0), syscall.EINVAL)
	if err := fs.SetXattr(d, "user.doppel.chunking", []byte("fixed:4K"), 0); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 64<<10) // 16 distinct 4 KiB blocks
	for i := range data {
		data[i] = byte(i/4096 + 1)
	}
	ino := writeFile(t, fs, d, "disk.img", data)
	if got := string(testutil.Must(fs.GetXattr(ino, "user.doppel.chunking"))); got != "fixed:4K" {
		t.Fatalf("child policy %q, want inherited fixed:4K", got)
	}
	if c := v.Engine.Stats().Stored(); c != 16 {
		t.Fatalf("fixed:4K file stored %d chunks, want 16", c)
	}
	writeFile(t, fs, vfs.RootIno, "plain", append([]byte("x"), data...))
	if c := v.Engine.Stats().Stored(); c != 17 {
		t.Fatalf("default-policy file added %d chunks, want 1 (64 KiB is under the CDC minimum cut)", c-16)
	}
}
