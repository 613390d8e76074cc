package namespace_test

import (
	"context"
	"testing"

	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/vfs"
)

// TestUsageOfLazyClone checks df and stat on a clone that still reads
// through its pin: they show its files and extents as the clone shows
// them, with chunks that the origin holds, not the clone.
func TestUsageOfLazyClone(t *testing.T) {
	v := fixedVolume(t)
	fs := v.NS
	top := must(fs.Mkdir(root, vfs.RootIno, "t", 0o755)).Ino
	sub := must(fs.Mkdir(root, top, "sub", 0o755)).Ino
	writeFile(t, fs, sub, "f", random(1, 256*KiB))
	must(fs.ClonePath("/t", "/c", namespace.CloneOptions{Lazy: true}))
	ctx := context.Background()

	u := must(fs.Usage(ctx, "/c"))
	if u.Files != 1 || u.Dirs != 2 || u.SizeBytes != 256*KiB || u.LogicalBytes != 256*KiB {
		t.Errorf("df of the lazy clone: %d files, %d dirs, %d bytes, %d logical; want 1, 2, %d, %d", u.Files, u.Dirs, u.SizeBytes, u.LogicalBytes, 256*KiB, 256*KiB)
	}
	if u.ExclusiveBytes != 0 {
		t.Errorf("df of the lazy clone: %d exclusive bytes; the origin holds them all", u.ExclusiveBytes)
	}
	st := must(fs.Stat("/c/sub/f"))
	if !st.ThroughPin || st.Ino != 0 || len(st.Extents) != 4 || st.LogicalBytes != 256*KiB || st.SharedBytes != 256*KiB {
		t.Errorf("stat of a file read through the pin: %+v", st)
	}

	// Changing the origin's copy leaves the clone's view as it was.
	must(0, fs.Unlink(sub, "f"))
	u = must(fs.Usage(ctx, "/c"))
	if u.Files != 1 || u.LogicalBytes != 256*KiB {
		t.Errorf("df of the lazy clone after the origin's file went: %+v", u)
	}

	// Once materialized, the file is the clone's own, and so is the chunk
	// of its one new byte; the rest the pin's retained versions share.
	c := must(fs.Lookup(vfs.RootIno, "c")).Ino
	csub := must(fs.Lookup(c, "sub")).Ino
	f := must(fs.Lookup(csub, "f")).Ino
	h := must(fs.Open(f, 2)) // O_RDWR
	must(fs.Write(h, 0, []byte("x")))
	must(0, fs.Release(h))
	st = must(fs.Stat("/c/sub/f"))
	if st.ThroughPin || st.Ino != f || st.LogicalBytes != 256*KiB || st.SharedBytes != 256*KiB-1 {
		t.Errorf("stat of the materialized file: %+v", st)
	}
	u = must(fs.Usage(ctx, "/c"))
	if u.ExclusiveBytes != 1 {
		t.Errorf("df of the materialized clone: %d exclusive bytes, want 1", u.ExclusiveBytes)
	}
}
