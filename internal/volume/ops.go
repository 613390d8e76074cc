package volume

import (
	"context"
	"io"

	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/importer"
	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/ops"
)

// Operations is the volume as the command line uses it (ops.API): what the daemon
// serves on its control socket, and what a command runs on an unmounted
// volume it opened itself.
func (v *Volume) Operations() ops.API { return operations{v} }

type operations struct{ v *Volume }

func (o operations) Space(context.Context) (ops.SpaceReport, error) { return o.v.Space() }

func (o operations) Usage(ctx context.Context, path string) (ops.Usage, error) {
	return o.v.NS.Usage(ctx, path)
}

func (o operations) Stat(_ context.Context, path string) (ops.FileStat, error) {
	return o.v.NS.Stat(path)
}

func (o operations) Clone(_ context.Context, req ops.CloneRequest) (ops.CloneResult, error) {
	return o.v.NS.ClonePath(req.Src, req.Dst, namespace.CloneOptions{Excludes: req.Excludes, ReadOnly: req.ReadOnly, Lazy: req.Lazy})
}

func (o operations) Clones(ctx context.Context, withSpace bool) ([]ops.CloneInfo, error) {
	return o.v.NS.Clones(ctx, withSpace)
}

func (o operations) RemoveClone(_ context.Context, path string) error {
	return o.v.NS.RemoveClone(path)
}

func (o operations) Diff(ctx context.Context, req ops.DiffRequest) (ops.DiffResult, error) {
	return o.v.NS.Diff(ctx, req.A, req.B, namespace.DiffOptions{Patch: req.Patch, Full: req.Full})
}

func (o operations) Scan(ctx context.Context, req ops.ScanRequest) ([]ops.ContentGroup, error) {
	return o.v.NS.ScanGroups(ctx, req.Paths, req.Since)
}

func (o operations) CopyFile(ctx context.Context, path string, w io.Writer) (uint32, error) {
	return o.v.NS.CopyFile(ctx, path, w)
}

func (o operations) Fsck(ctx context.Context, req ops.FsckRequest, progress func(fsck.Progress)) (ops.FsckResult, error) {
	return o.v.Fsck(ctx, req, progress)
}

func (o operations) Import(ctx context.Context, req ops.ImportRequest, progress func(importer.Progress)) (importer.Summary, error) {
	return o.v.Import(ctx, req.Src, req.Dst, importer.Options{Jobs: req.Jobs, OnProgress: progress, ProgressInterval: req.ProgressEvery})
}

func (o operations) Sync(context.Context) error { return o.v.NS.SyncFS() }

func (o operations) Status(context.Context) (ops.Status, error) {
	return ops.Status{}, ops.ErrNotMounted
}

func (o operations) Export(ctx context.Context, req ops.ExportRequest, started func(ops.ExportStatus)) error {
	return o.v.Exports.Serve(ctx, req, started)
}
