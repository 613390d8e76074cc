package namespace_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/ops"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/voltest"
	"github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

const KiB = 1 << 10

// fixedVolume opens a new volume cutting 64 KiB blocks, without
// compression, so that chunk sizes are known in advance.
func fixedVolume(t *testing.T) *volume.Volume {
	t.Helper()
	dir := t.TempDir()
	if err := voltest.VolumeInit(dir, volume.InitOptions{Chunking: "fixed:64K"}); err != nil {
		t.Fatal(err)
	}
	v, err := volume.Open(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

func usage(t *testing.T, v *volume.Volume, path string) ops.Usage {
	t.Helper()
	u, err := v.NS.Usage(context.Background(), path)
	if err != nil {
		t.Fatalf("Usage(%s): %v", path, err)
	}
	return u
}

func fileStat(t *testing.T, v *volume.Volume, path string) ops.FileStat {
	t.Helper()
	st, err := v.NS.Stat(path)
	if err != nil {
		t.Fatalf("Stat(%s): %v", path, err)
	}
	return st
}

func mkdir(t *testing.T, fs vfs.FS, parent uint64, name string) uint64 {
	t.Helper()
	return testutil.Must(fs.Mkdir(root, parent, name, 0o755)).Ino
}

// wantUsage compares the figures that tests set up on purpose.
func wantUsage(t *testing.T, u ops.Usage, files, logical, chunks, physical, exclusive int64) {
	t.Helper()
	if u.Files != files || u.LogicalBytes != logical || u.Chunks != chunks || u.PhysicalBytes != physical || u.ExclusiveBytes != exclusive {
		t.Fatalf("%s: files %d logical %d chunks %d physical %d exclusive %d; want %d %d %d %d %d",
			u.Path, u.Files, u.LogicalBytes, u.Chunks, u.PhysicalBytes, u.ExclusiveBytes, files, logical, chunks, physical, exclusive)
	}
}

func TestUsageOfSharedChunks(t *testing.T) {
	v := fixedVolume(t)
	data := testutil.SeededBytes(1, 256*KiB) // four chunks
	writeFile(t, v.NS, mkdir(t, v.NS, vfs.RootIno, "a"), "f", data)
	b := mkdir(t, v.NS, vfs.RootIno, "b")
	writeFile(t, v.NS, b, "f", data) // deduplicated: same chunks

	wantUsage(t, usage(t, v, "/a"), 1, 256*KiB, 4, 256*KiB, 0)
	wantUsage(t, usage(t, v, "/a/f"), 1, 256*KiB, 4, 256*KiB, 0)
	all := usage(t, v, "/")
	wantUsage(t, all, 2, 512*KiB, 4, 256*KiB, 256*KiB)
	if all.Dirs != 3 || all.DedupRatio != 2 || all.CompressRatio != 1 {
		t.Errorf("/: dirs %d dedup %.2f compression %.2f; want 3, 2, 1", all.Dirs, all.DedupRatio, all.CompressRatio)
	}
	st := fileStat(t, v, "/a/f")
	if st.SharedBytes != 256*KiB || len(st.Extents) != 4 || len(st.Chunks) != 4 {
		t.Fatalf("stat: shared %d, %d extents, %d chunks; want all shared, 4, 4", st.SharedBytes, len(st.Extents), len(st.Chunks))
	}
	for _, c := range st.Chunks {
		if c.Refs != 2 || c.FileRefs != 1 || c.StoredBytes != 64*KiB || c.RawBytes != 64*KiB {
			t.Errorf("chunk %+v: want 2 refs, 1 from the file, 64 KiB", c)
		}
	}

	testutil.Must(0, v.NS.Unlink(b, "f"))
	wantUsage(t, usage(t, v, "/a"), 1, 256*KiB, 4, 256*KiB, 256*KiB)
	if st := fileStat(t, v, "/a/f"); st.SharedBytes != 0 {
		t.Errorf("shared bytes %d after the other copy went, want 0", st.SharedBytes)
	}
}

func TestUsageOfPartialChunkExtents(t *testing.T) {
	v := fixedVolume(t)
	f := writeFile(t, v.NS, vfs.RootIno, "f", testutil.SeededBytes(2, 128*KiB)) // chunks A, B
	// Overwriting 10 KiB inside A splits its extent around a new chunk C:
	// A gets a second reference, from the same file.
	h := testutil.Must(v.NS.Open(f, syscall.O_RDWR))
	testutil.Must(v.NS.Write(h, 10*KiB, testutil.SeededBytes(3, 10*KiB)))
	testutil.Must(0, v.NS.Release(h))
	wantUsage(t, usage(t, v, "/f"), 1, 128*KiB, 3, 138*KiB, 138*KiB)
	st := fileStat(t, v, "/f")
	if len(st.Extents) != 4 || st.SharedBytes != 0 {
		t.Fatalf("after the overwrite: extents %+v, shared %d; want 4 extents, none shared", st.Extents, st.SharedBytes)
	}
	a := st.Extents[0].Chunk
	if x := st.Extents[2]; x.Chunk != a || x.Offset != 20*KiB || x.ChunkOffset != 20*KiB || x.Length != 44*KiB {
		t.Errorf("third extent %+v, want A's bytes from 20 KiB to its end", x)
	}
	if c := st.Chunks[0]; c.Refs != 2 || c.FileRefs != 2 {
		t.Errorf("chunk A %+v: want 2 references, both from the file", c)
	}

	// g takes 10 KiB from the middle of A's second extent: deleting f
	// would no longer free A.
	gAttr, hg, err := v.NS.Create(root, vfs.RootIno, "g", 0o644, syscall.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	hf := testutil.Must(v.NS.Open(f, syscall.O_RDONLY))
	if n := testutil.Must(v.NS.CopyFileRange(hf, 30*KiB, hg, 0, 10*KiB)); n != 10*KiB {
		t.Fatalf("copied %d bytes", n)
	}
	testutil.Must(0, v.NS.Release(hf))
	testutil.Must(0, v.NS.Release(hg))
	wantUsage(t, usage(t, v, "/f"), 1, 128*KiB, 3, 138*KiB, 74*KiB)
	wantUsage(t, usage(t, v, "/g"), 1, 10*KiB, 1, 64*KiB, 0)
	if st := fileStat(t, v, "/f"); st.SharedBytes != 54*KiB {
		t.Errorf("f shares %d bytes, want A's 54 KiB", st.SharedBytes)
	}
	g := fileStat(t, v, "/g")
	if g.Ino != gAttr.Ino || len(g.Extents) != 1 || g.Extents[0].Chunk != a || g.Extents[0].ChunkOffset != 30*KiB || g.SharedBytes != 10*KiB {
		t.Errorf("g: %+v; want one extent of A at 30 KiB, shared", g)
	}
	if c := g.Chunks[0]; c.Refs != 3 || c.FileRefs != 1 {
		t.Errorf("g's chunk %+v: want 3 references, 1 from g", c)
	}
	wantUsage(t, usage(t, v, "/"), 2, 138*KiB, 3, 138*KiB, 138*KiB)
}

func TestUsageWithHardLinks(t *testing.T) {
	v := fixedVolume(t)
	d := mkdir(t, v.NS, vfs.RootIno, "d")
	f := writeFile(t, v.NS, d, "f", testutil.SeededBytes(4, 128*KiB))
	testutil.Must(v.NS.Link(f, d, "g")) // both links inside d: one file, freed with d
	wantUsage(t, usage(t, v, "/d"), 1, 128*KiB, 2, 128*KiB, 128*KiB)
	wantUsage(t, usage(t, v, "/d/f"), 1, 128*KiB, 2, 128*KiB, 0) // /d/g keeps it

	out := mkdir(t, v.NS, vfs.RootIno, "out")
	testutil.Must(v.NS.Link(f, out, "h")) // a link outside d keeps the file alive
	wantUsage(t, usage(t, v, "/d"), 1, 128*KiB, 2, 128*KiB, 0)
	wantUsage(t, usage(t, v, "/out"), 1, 128*KiB, 2, 128*KiB, 0)
	wantUsage(t, usage(t, v, "/"), 1, 128*KiB, 2, 128*KiB, 128*KiB)
	if st := fileStat(t, v, "/out/h"); st.Nlink != 3 || st.SharedBytes != 0 {
		t.Errorf("stat of a hard link: nlink %d shared %d; want 3 and 0 (links share the inode, not chunks)", st.Nlink, st.SharedBytes)
	}
}

func TestUsageWithHoles(t *testing.T) {
	v := fixedVolume(t)
	a, h, err := v.NS.Create(root, vfs.RootIno, "sparse", 0o644, syscall.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Must(v.NS.Write(h, 0, testutil.SeededBytes(5, 64*KiB)))
	testutil.Must(v.NS.Write(h, 1<<20, testutil.SeededBytes(6, 16*KiB)))
	testutil.Must(v.NS.Write(h, 2<<20, make([]byte, 64*KiB))) // zeros are holes too
	testutil.Must(0, v.NS.Release(h))
	u := usage(t, v, "/sparse")
	wantUsage(t, u, 1, 80*KiB, 2, 80*KiB, 80*KiB)
	if u.SizeBytes != 2<<20+64*KiB {
		t.Errorf("size %d, want %d", u.SizeBytes, 2<<20+64*KiB)
	}
	st := fileStat(t, v, "/sparse")
	if st.Ino != a.Ino || st.SizeBytes != 2<<20+64*KiB || st.LogicalBytes != 80*KiB || len(st.Extents) != 2 || st.Extents[1].Offset != 1<<20 {
		t.Errorf("stat: %+v; want two extents, at 0 and 1 MiB, and the size past the holes", st)
	}
}

func TestUsageSeesBufferedWrites(t *testing.T) {
	v := fixedVolume(t)
	d := mkdir(t, v.NS, vfs.RootIno, "d")
	_, h, err := v.NS.Create(root, d, "open", 0o644, syscall.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer v.NS.Release(h)
	testutil.Must(v.NS.Write(h, 0, testutil.SeededBytes(7, 100*KiB))) // buffered, not committed
	wantUsage(t, usage(t, v, "/d"), 1, 100*KiB, 2, 100*KiB, 100*KiB)  // found through its parent
	testutil.Must(v.NS.Write(h, 100*KiB, testutil.SeededBytes(8, 28*KiB)))
	if st := fileStat(t, v, "/d/open"); st.SizeBytes != 128*KiB || st.LogicalBytes != 128*KiB {
		t.Errorf("stat of a file being written: size %d logical %d, want 128 KiB", st.SizeBytes, st.LogicalBytes)
	}
}

func TestUsageOfWholeVolumeMatchesStats(t *testing.T) {
	v := fixedVolume(t)
	d := mkdir(t, v.NS, vfs.RootIno, "d")
	f := writeFile(t, v.NS, d, "f", testutil.SeededBytes(9, 300*KiB))
	writeFile(t, v.NS, vfs.RootIno, "g", testutil.SeededBytes(9, 200*KiB)) // shares f's first chunks
	testutil.Must(v.NS.Link(f, vfs.RootIno, "link"))
	testutil.Must(v.NS.Symlink(root, d, "sym", "f"))
	u := usage(t, v, "/")
	s := v.Engine.Stats()
	wantUsage(t, u, 3, s.LogicalBytes, s.Chunks, s.PhysicalBytes, s.PhysicalBytes)
	if u.RawBytes != s.RawBytes || u.Dirs != 2 || u.MetaBytes <= 0 {
		t.Errorf("raw %d (stats %d), dirs %d, meta %d", u.RawBytes, s.RawBytes, u.Dirs, u.MetaBytes)
	}
	if st := fileStat(t, v, "/d/sym"); st.Type != "symlink" || st.SizeBytes != 1 || len(st.Extents) != 0 {
		t.Errorf("stat of a symlink: %+v", st)
	}
}

func TestUsageErrors(t *testing.T) {
	v := fixedVolume(t)
	writeFile(t, v.NS, vfs.RootIno, "f", []byte("x"))
	_, err := v.NS.Usage(context.Background(), "/missing")
	wantErr(t, err, syscall.ENOENT)
	_, err = v.NS.Stat("/f/below")
	wantErr(t, err, syscall.ENOTDIR)
	_, err = v.NS.Stat("/")
	wantErr(t, err, syscall.EISDIR)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = v.NS.Usage(ctx, "/")
	wantErr(t, err, context.Canceled)
}

func TestUsageIsConsistentWhileRenaming(t *testing.T) {
	// A file moving between two directories is in exactly one of them in
	// every committed state; a walk reading the live store could find it
	// in both or in neither.
	v := fixedVolume(t)
	x := mkdir(t, v.NS, vfs.RootIno, "x")
	y := mkdir(t, v.NS, vfs.RootIno, "y")
	const files = 8
	for i := range files {
		writeFile(t, v.NS, x, string(rune('a'+i)), testutil.SeededBytes(uint64(10+i), 64*KiB))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := string(rune('a' + i%files))
			from, to := x, y
			if i/files%2 == 1 {
				from, to = y, x
			}
			if err := v.NS.Rename(from, name, to, name, 0); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 300 {
		if u := usage(t, v, "/"); u.Files != files || u.LogicalBytes != files*64*KiB {
			t.Errorf("walk during renames: %d files, %d bytes; want %d, %d", u.Files, u.LogicalBytes, files, files*64*KiB)
			break
		}
	}
	close(stop)
	wg.Wait()
}
