// Package ops is what the command line asks of a volume: one interface,
// API, and the messages it takes and returns. An opened volume
// implements it (volume.Operations), and so does the daemon's control
// socket client (control.Client), so that each command is written once
// and runs the same whether the volume is mounted or not; the daemon
// serves the same interface on its socket (control.Serve).
//
// The messages carry their JSON names: they are what the control socket
// and `--json` output speak. Those of clone and snapshot live in
// control/wire, which the light front command (cmd/doppel) links without
// the rest, and are named here too.
//
// Files:
//
//   - ops.go: the API interface.
//   - space.go: SpaceReport (df) and Usage (df PATH).
//   - stat.go: FileStat (stat) and its extents and chunks.
//   - clone.go: clone, snapshot, clones and rmclone.
//   - diff.go: DiffRequest and DiffResult.
//   - scan.go: ScanRequest and ContentGroup.
//   - check.go: fsck's request and result.
//   - imports.go: ImportRequest.
//   - export.go: ExportRequest and ExportStatus (`doppel nbd`).
//   - status.go: Status, and ErrNotMounted for what only a daemon knows.
//   - unsupported.go: Unsupported, for implementations of some operations.
package ops
