package namespace_test

import (
	"bytes"
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
)

// piece is data at an offset; the gaps between pieces are holes.
type piece struct {
	off  int64
	data []byte
}

// pieceReader serves pieces to NewFile.ReadNext in reads of at most max
// bytes, failing with failErr once failAt bytes were read (if failAt > 0).
func pieceReader(pieces []piece, max int, failAt int, failErr error) func([]byte) (int64, int, error) {
	i, done, total := 0, 0, 0
	return func(p []byte) (int64, int, error) {
		if i == len(pieces) {
			return 0, 0, io.EOF
		}
		if failAt > 0 && total >= failAt {
			return 0, 0, failErr
		}
		pc := pieces[i]
		n := copy(p[:min(len(p), max)], pc.data[done:])
		off := pc.off + int64(done)
		if done += n; done == len(pc.data) {
			i, done = i+1, 0
		}
		total += n
		return off, n, nil
	}
}

// TestCreateFileMatchesWrites creates a file of several windows with
// holes through CreateFile, then writes the same content through
// create/write/close: the second copy must store no new chunk, which
// shows both paths cut the same chunks.
func TestCreateFileMatchesWrites(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	pieces := []piece{
		{0, testutil.SeededBytes(1, 5<<20+123)},
		{9 << 20, testutil.SeededBytes(2, 13<<20)}, // crosses window boundaries
		{30<<20 + 7, testutil.SeededBytes(3, 100)},
	}
	size := int64(40 << 20) // a trailing hole
	mtime := time.Unix(1234567890, 123456789)
	a, err := fs.CreateFile(vfs.RootIno, "ingested", vfs.NewFile{
		Mode: 0o640, Uid: 5, Gid: 6, Atime: mtime.Add(time.Hour), Mtime: mtime, Size: size,
		ReadNext: pieceReader(pieces, 3<<20+5, 0, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, size)
	for _, p := range pieces {
		copy(want[p.off:], p.data)
	}
	got := testutil.Must(fs.GetAttr(a.Ino))
	if got.Size != size || got.Mode != syscall.S_IFREG|0o640 || got.Uid != 5 || got.Gid != 6 ||
		!got.Mtime.Equal(mtime) || !got.Atime.Equal(mtime.Add(time.Hour)) {
		t.Errorf("attributes %+v", got)
	}
	if !bytes.Equal(readFile(t, fs, a.Ino), want) {
		t.Errorf("content differs")
	}
	if got.Blocks*512 > int64(19<<20) {
		t.Errorf("%d bytes mapped for 18 MiB of data: holes were filled", got.Blocks*512)
	}
	before := v.Engine.Stats().PhysicalBytes
	_, h, err := fs.Create(root, vfs.RootIno, "written", 0o644, syscall.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pieces {
		for off := 0; off < len(p.data); off += 1 << 20 {
			testutil.Must(fs.Write(h, p.off+int64(off), p.data[off:min(len(p.data), off+1<<20)]))
		}
	}
	if err := fs.Release(h); err != nil {
		t.Fatal(err)
	}
	if after := v.Engine.Stats().PhysicalBytes; after != before {
		t.Errorf("writing the same content stored %d new bytes: CreateFile cut different chunks", after-before)
	}
}

// TestCreateFileSourceError checks that a failing source leaves nothing:
// no entry, no inode, no data, small file or large.
func TestCreateFileSourceError(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	boom := errors.New("boom")
	before := v.Engine.Stats()
	for _, failAt := range []int{1, 12 << 20} {
		_, err := fs.CreateFile(vfs.RootIno, "f", vfs.NewFile{
			Mode: 0o644, Size: 20 << 20,
			ReadNext: pieceReader([]piece{{0, testutil.SeededBytes(4, 20<<20)}}, 1<<20, failAt, boom),
		})
		if !errors.Is(err, boom) {
			t.Fatalf("failing at %d: error %v, want the source's", failAt, err)
		}
		if _, err := fs.Lookup(vfs.RootIno, "f"); !errors.Is(err, syscall.ENOENT) {
			t.Fatalf("failing at %d: the file is there (%v)", failAt, err)
		}
	}
	after := v.Engine.Stats()
	if after.Inodes != before.Inodes || after.LogicalBytes != before.LogicalBytes || after.Chunks != before.Chunks {
		t.Errorf("stats after failed creations %+v, before %+v", after, before)
	}
}

// TestCreateFileXattrs checks that a file gets exactly its attributes,
// whatever its directory would pass on, and that its own chunking policy
// applies to its data.
func TestCreateFileXattrs(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	dir := testutil.Must(fs.Mkdir(root, vfs.RootIno, "d", 0o755)).Ino
	if err := fs.SetXattr(dir, namespace.PolicyXattr, []byte("fixed:4K"), 0); err != nil {
		t.Fatal(err)
	}
	data := testutil.SeededBytes(5, 64<<10)
	var refused []string
	a, err := fs.CreateFile(dir, "f", vfs.NewFile{
		Mode: 0o644, Size: int64(len(data)),
		Xattrs:       []vfs.Xattr{{Name: "user.a", Value: []byte("1")}, {Name: "", Value: nil}},
		XattrRefused: func(name string, err error) { refused = append(refused, name) },
		ReadNext:     pieceReader([]piece{{0, data}}, len(data), 0, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if names := testutil.Must(fs.ListXattr(a.Ino)); len(names) != 1 || names[0] != "user.a" || len(refused) != 1 {
		t.Errorf("xattrs %q, refused %q; want exactly user.a, and the nameless one refused", names, refused)
	}
	// With its own fixed:4K policy, 64 KiB make 16 chunks.
	chunks := v.Engine.Stats().Stored()
	_, err = fs.CreateFile(dir, "g", vfs.NewFile{
		Mode: 0o644, Size: int64(len(data)),
		Xattrs:   []vfs.Xattr{{Name: namespace.PolicyXattr, Value: []byte("fixed:4K")}},
		ReadNext: pieceReader([]piece{{0, testutil.SeededBytes(6, 64<<10)}}, 64<<10, 0, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := v.Engine.Stats().Stored() - chunks; n != 16 {
		t.Errorf("64 KiB under fixed:4K made %d chunks, want 16", n)
	}
}
