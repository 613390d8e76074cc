package namespace_test

import (
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/voltest"
	"github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

func TestCountersFollowTheFlushQueue(t *testing.T) {
	dir := t.TempDir()
	if err := voltest.VolumeInit(dir, volume.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	// No background flush during the test: only the test's calls move data.
	v, err := volume.OpenWith(dir, slog.New(slog.NewTextHandler(io.Discard, nil)), namespace.Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	fs := v.NS
	check := func(when string, want namespace.Counters) {
		t.Helper()
		if got := fs.Counters(); got != want {
			t.Fatalf("%s: %+v, want %+v", when, got, want)
		}
	}
	check("at start", namespace.Counters{})

	a, ha := must2(fs.Create(root, vfs.RootIno, "a", 0o644, syscall.O_WRONLY))
	_, hb := must2(fs.Create(root, vfs.RootIno, "b", 0o644, syscall.O_WRONLY))
	testutil.Must(fs.Write(ha, 0, make([]byte, 1000)))
	testutil.Must(fs.Write(ha, 500, make([]byte, 1000))) // overlaps: 1500 bytes buffered
	testutil.Must(fs.Write(hb, 0, []byte("hello")))
	check("after writes", namespace.Counters{WrittenBytes: 2005, DirtyBytes: 1505, DirtyFiles: 2, OpenFiles: 2})

	if err := fs.Flush(ha); err != nil {
		t.Fatal(err)
	}
	check("after flushing a", namespace.Counters{WrittenBytes: 2005, DirtyBytes: 5, DirtyFiles: 1, OpenFiles: 2})
	testutil.Must(fs.Write(ha, 2000, make([]byte, 100)))
	check("after writing a again", namespace.Counters{WrittenBytes: 2105, DirtyBytes: 105, DirtyFiles: 2, OpenFiles: 2})
	if _, err := fs.SetAttr(root, a.Ino, vfs.SetAttr{SetSize: true, Size: 10}); err != nil {
		t.Fatal(err)
	}
	check("after truncating a", namespace.Counters{WrittenBytes: 2105, DirtyBytes: 5, DirtyFiles: 1, OpenFiles: 2})
	if err := fs.Release(hb); err != nil {
		t.Fatal(err)
	}
	check("after closing b", namespace.Counters{WrittenBytes: 2105, OpenFiles: 1})
	if err := fs.Release(ha); err != nil {
		t.Fatal(err)
	}
	check("after closing a", namespace.Counters{WrittenBytes: 2105})
}

func must2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		panic(err)
	}
	return a, b
}
