package pgstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil/pgtest"
	"github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

// TestVolumeOnPostgres runs a whole volume (namespace, content engine,
// clones' bookkeeping) on the PostgreSQL store with local segment files:
// files and directories made, written and fsync'd are all there after the
// volume is closed and opened again. It logs the round trips a create, a
// small write and a lookup cost (docs/SHARED.md, section 7).
func TestVolumeOnPostgres(t *testing.T) {
	srv := pgtest.Start(t)
	dsn := srv.CreateDB(t, "volume")
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var wire *atomic.Int64
	open := func() *volume.Volume {
		t.Helper()
		m, n, err := pgstore.OpenCounting(context.Background(), pgstore.Options{URL: dsn, Schema: "vol", Create: true})
		must(t, err)
		wire = n
		b, err := blob.OpenDir(filepath.Join(dir, "chunks"), blob.Options{})
		must(t, err)
		v, err := volume.OpenOn(dir, m, b, log, namespace.Options{})
		must(t, err)
		return v
	}
	{
		m, err := pgstore.Open(context.Background(), pgstore.Options{URL: dsn, Schema: "vol", Create: true})
		must(t, err)
		must(t, volume.InitOn(m, volume.InitOptions{}))
		must(t, m.Close())
	}
	v := open()
	fs := v.NS
	c := vfs.Caller{}
	d, err := fs.Mkdir(c, 1, "d", 0o755)
	must(t, err)
	data := func(i int) []byte { return bytes.Repeat(fmt.Appendf(nil, "file %d;", i), 500+i) }
	const files = 40
	var create, write, lookup int64
	for i := range files {
		before := wire.Load()
		a, h, err := fs.Create(c, d.Ino, fmt.Sprintf("f%02d", i), 0o644, syscall.O_WRONLY)
		must(t, err)
		afterCreate := wire.Load()
		_, err = fs.Write(h, 0, data(i))
		must(t, err)
		must(t, fs.Fsync(h, false))
		must(t, fs.Release(h))
		afterWrite := wire.Load()
		if _, err := fs.Lookup(d.Ino, fmt.Sprintf("f%02d", i)); err != nil {
			t.Fatal(err)
		}
		create += afterCreate - before
		write += afterWrite - afterCreate
		lookup += wire.Load() - afterWrite
		_ = a
	}
	t.Logf("round trips per operation (mean of %d): create %.1f, write 4-9 KiB + fsync + release %.1f, lookup %.1f",
		files, float64(create)/files, float64(write)/files, float64(lookup)/files)
	must(t, v.Close())

	v = open()
	defer v.Close()
	fs = v.NS
	d, err = fs.Lookup(1, "d")
	must(t, err)
	for i := range files {
		a, err := fs.Lookup(d.Ino, fmt.Sprintf("f%02d", i))
		must(t, err)
		h, err := fs.Open(a.Ino, syscall.O_RDONLY)
		must(t, err)
		want := data(i)
		buf := make([]byte, len(want)+10)
		n, err := fs.Read(h, 0, buf)
		must(t, err)
		must(t, fs.Release(h))
		if !bytes.Equal(buf[:n], want) {
			t.Fatalf("f%02d reads back %d bytes, want %d", i, n, len(want))
		}
	}
}
