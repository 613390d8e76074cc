package ops

import (
	"context"
	"io"

	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/importer"
)

// Unsupported answers every operation with Err. Implementations that
// serve only some operations embed it (a volume opened for checking only
// serves Fsck).
type Unsupported struct{ Err error }

func (u Unsupported) Space(context.Context) (SpaceReport, error)   { return SpaceReport{}, u.Err }
func (u Unsupported) Usage(context.Context, string) (Usage, error) { return Usage{}, u.Err }
func (u Unsupported) Stat(context.Context, string) (FileStat, error) {
	return FileStat{}, u.Err
}
func (u Unsupported) Clone(context.Context, CloneRequest) (CloneResult, error) {
	return CloneResult{}, u.Err
}
func (u Unsupported) Clones(context.Context, bool) ([]CloneInfo, error) { return nil, u.Err }
func (u Unsupported) RemoveClone(context.Context, string) error         { return u.Err }
func (u Unsupported) Diff(context.Context, DiffRequest) (DiffResult, error) {
	return DiffResult{}, u.Err
}
func (u Unsupported) Scan(context.Context, ScanRequest) ([]ContentGroup, error) { return nil, u.Err }
func (u Unsupported) CopyFile(context.Context, string, io.Writer) (uint32, error) {
	return 0, u.Err
}
func (u Unsupported) Fsck(context.Context, FsckRequest, func(fsck.Progress)) (FsckResult, error) {
	return FsckResult{}, u.Err
}
func (u Unsupported) Import(context.Context, ImportRequest, func(importer.Progress)) (importer.Summary, error) {
	return importer.Summary{}, u.Err
}
func (u Unsupported) Sync(context.Context) error             { return u.Err }
func (u Unsupported) Status(context.Context) (Status, error) { return Status{}, u.Err }
func (u Unsupported) Export(context.Context, ExportRequest, func(ExportStatus)) error {
	return u.Err
}

var _ API = Unsupported{}
