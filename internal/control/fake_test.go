package control

import (
	"context"
	"io"

	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/importer"
	"github.com/doppelfs/doppel/internal/ops"
)

// fakeVolume answers the operations a test gives it; the others are nil
// (calling them panics).
type fakeVolume struct {
	ops.API
	usage    func(ctx context.Context, path string) (ops.Usage, error)
	stat     func(ctx context.Context, path string) (ops.FileStat, error)
	fsck     func(ctx context.Context, req ops.FsckRequest, progress func(fsck.Progress)) (ops.FsckResult, error)
	copyFile func(ctx context.Context, path string, w io.Writer) (uint32, error)
	imports  func(ctx context.Context, req ops.ImportRequest, progress func(importer.Progress)) (importer.Summary, error)
}

func (f fakeVolume) Usage(ctx context.Context, path string) (ops.Usage, error) {
	return f.usage(ctx, path)
}

func (f fakeVolume) Stat(ctx context.Context, path string) (ops.FileStat, error) {
	return f.stat(ctx, path)
}

func (f fakeVolume) Fsck(ctx context.Context, req ops.FsckRequest, progress func(fsck.Progress)) (ops.FsckResult, error) {
	return f.fsck(ctx, req, progress)
}

func (f fakeVolume) Import(ctx context.Context, req ops.ImportRequest, progress func(importer.Progress)) (importer.Summary, error) {
	return f.imports(ctx, req, progress)
}

func (f fakeVolume) CopyFile(ctx context.Context, path string, w io.Writer) (uint32, error) {
	return f.copyFile(ctx, path, w)
}
