package ops

import (
	"context"
	"io"

	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/importer"
)

// API is everything the command line asks of one volume. Paths are
// "/"-rooted inside the volume.
type API interface {
	// Space is the whole volume's space (`doppel df`).
	Space(ctx context.Context) (SpaceReport, error)
	// Usage is the space of the subtree at path (`doppel df PATH`).
	Usage(ctx context.Context, path string) (Usage, error)
	// Stat says how the file at path is stored (`doppel stat`).
	Stat(ctx context.Context, path string) (FileStat, error)
	// Clone makes a clone or a snapshot (`doppel clone`, `doppel snapshot`).
	Clone(ctx context.Context, req CloneRequest) (CloneResult, error)
	// Clones lists clones and snapshots; withSpace adds what only each
	// one holds (`doppel clones`).
	Clones(ctx context.Context, withSpace bool) ([]CloneInfo, error)
	// RemoveClone detaches a clone and frees it in the background
	// (`doppel rmclone`).
	RemoveClone(ctx context.Context, path string) error
	// Diff compares two trees (`doppel diff`).
	Diff(ctx context.Context, req DiffRequest) (DiffResult, error)
	// Scan groups the files below some trees by content (`doppel scan`).
	Scan(ctx context.Context, req ScanRequest) ([]ContentGroup, error)
	// CopyFile writes the content of the regular file at path to w as a
	// reader sees it, without materializing clones, and returns the
	// file's mode (scan's command reads such a copy where the volume is
	// not mounted).
	CopyFile(ctx context.Context, path string, w io.Writer) (mode uint32, err error)
	// Fsck checks, or repairs, the volume, calling progress (if not nil)
	// as it goes (`doppel fsck`).
	Fsck(ctx context.Context, req FsckRequest, progress func(fsck.Progress)) (FsckResult, error)
	// Import copies a host tree into the volume, calling progress (if not
	// nil) as it goes (`doppel import`).
	Import(ctx context.Context, req ImportRequest, progress func(importer.Progress)) (importer.Summary, error)
	// Sync makes everything written so far durable (`doppel sync`).
	Sync(ctx context.Context) error
	// Status is the serving daemon and its counters (`doppel status`);
	// ErrNotMounted for a volume no daemon serves.
	Status(ctx context.Context) (Status, error)
	// Export serves files of the volume over NBD until ctx is done, then
	// stops, flushes them and returns (`doppel nbd`). started is called
	// once the server listens.
	Export(ctx context.Context, req ExportRequest, started func(ExportStatus)) error
}
