package namespace_test

import (
	"context"
	"testing"

	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
)

// TestUsageOfLazyClone checks df and stat on a clone that still reads
// through its pin: they show its files and extents as the clone shows
// them, with chunks that the origin holds, not the clone.
func TestUsageOfLazyClone(t *testing.T) {
	v := fixedVolume(t)
	fs := v.NS
	top := testutil.Must(fs.Mkdir(root, vfs.RootIno, "t", 0o755)).Ino
	sub := testutil.Must(fs.Mkdir(root, top, "sub", 0o755)).Ino
	writeFile(t, fs, sub, "f", testutil.SeededBytes(1, 256*KiB))
	testutil.Must(fs.ClonePath("/t", "/c", namespace.CloneOptions{Lazy: true}))
	ctx := context.Background()

	u := testutil.Must(fs.Usage(ctx, "/c"))
	if u.Files != 1 || u.Dirs != 2 || u.SizeBytes != 256*KiB || u.LogicalBytes != 256*KiB {
		t.Errorf("df of the lazy clone: %d files, %d dirs, %d bytes, %d logical; want 1, 2, %d, %d", u.Files, u.Dirs, u.SizeBytes, u.LogicalBytes, 256*KiB, 256*KiB)
	}
	if u.ExclusiveBytes != 0 {
		t.Errorf("df of the lazy clone: %d exclusive bytes; the origin holds them all", u.ExclusiveBytes)
	}
	st := testutil.Must(fs.Stat("/c/sub/f"))
	if !st.ThroughPin || st.Ino != 0 || len(st.Extents) != 4 || st.LogicalBytes != 256*KiB || st.SharedBytes != 256*KiB {
		t.Errorf("stat of a file read through the pin: %+v", st)
	}

	// Changing the origin's copy leaves the clone's view as it was.
	testutil.Must(0, fs.Unlink(sub, "f"))
	u = testutil.Must(fs.Usage(ctx, "/c"))
	if u.Files != 1 || u.LogicalBytes != 256*KiB {
		t.Errorf("df of the lazy clone after the origin's file went: %+v", u)
	}

	// Once materialized, the file is the clone's own, and so is the chunk
	// of its one new byte; the rest the pin's retained versions share.
	c := testutil.Must(fs.Lookup(vfs.RootIno, "c")).Ino
	csub := testutil.Must(fs.Lookup(c, "sub")).Ino
	f := testutil.Must(fs.Lookup(csub, "f")).Ino
	h := testutil.Must(fs.Open(f, 2)) // O_RDWR
	testutil.Must(fs.Write(h, 0, []byte("x")))
	testutil.Must(0, fs.Release(h))
	st = testutil.Must(fs.Stat("/c/sub/f"))
	if st.ThroughPin || st.Ino != f || st.LogicalBytes != 256*KiB || st.SharedBytes != 256*KiB-1 {
		t.Errorf("stat of the materialized file: %+v", st)
	}
	u = testutil.Must(fs.Usage(ctx, "/c"))
	if u.ExclusiveBytes != 1 {
		t.Errorf("df of the materialized clone: %d exclusive bytes, want 1", u.ExclusiveBytes)
	}
}
