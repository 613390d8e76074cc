package fusefs

import (
	"io"
	"log/slog"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/doppelfs/doppel/internal/metrics"
	"github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

// The adapter's cost per request, on a real volume but without the
// kernel: what the request accounting adds shows against cheap requests.

func benchFS(b *testing.B) (*FS, *volume.Volume) {
	dir := b.TempDir()
	if err := volume.Init(dir, volume.InitOptions{}); err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	v, err := volume.Open(dir, log)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { v.Close() })
	return New(v.NS, new(metrics.Ops), log), v
}

func BenchmarkGetAttr(b *testing.B) {
	f, _ := benchFS(b)
	in := &fuse.GetAttrIn{InHeader: fuse.InHeader{NodeId: vfs.RootIno}}
	var out fuse.AttrOut
	for b.Loop() {
		if st := f.GetAttr(nil, in, &out); !st.Ok() {
			b.Fatal(st)
		}
	}
}

func BenchmarkLookupMissing(b *testing.B) {
	f, _ := benchFS(b)
	h := &fuse.InHeader{NodeId: vfs.RootIno}
	var out fuse.EntryOut
	for b.Loop() {
		if st := f.Lookup(nil, h, "missing", &out); st != fuse.ENOENT {
			b.Fatal(st)
		}
	}
}

func BenchmarkRead4K(b *testing.B) {
	f, v := benchFS(b)
	_, h, err := v.NS.Create(vfs.Caller{}, vfs.RootIno, "f", 0o644, syscall.O_RDWR)
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if _, err := v.NS.Write(h, 0, data); err != nil {
		b.Fatal(err)
	}
	if err := v.NS.Flush(h); err != nil {
		b.Fatal(err)
	}
	in := &fuse.ReadIn{InHeader: fuse.InHeader{NodeId: 2}, Fh: uint64(h), Size: 4096}
	buf := make([]byte, 4096)
	b.SetBytes(4096)
	for i := 0; b.Loop(); i++ {
		in.Offset = uint64(i%256) * 4096
		if _, st := f.Read(nil, in, buf); !st.Ok() {
			b.Fatal(st)
		}
	}
}
