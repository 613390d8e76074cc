// Package control is the daemon's control socket: HTTP over a Unix socket
// in the volume directory, readable by its owner only. The daemon serves
// an ops.API on it (Serve); Client is the other end, and implements
// ops.API too, so that a command does the same through the socket as
// on a volume it opened itself.
//
// Files:
//
//   - control.go: Serve, the routes of df and sync, Client and its calls.
//   - clone.go: clone, clones, rmclone, diff and scan.
//   - inspect.go: df PATH and stat, and the helpers that answer a JSON
//     request or a path parameter.
//   - copyfile.go: GET /v1/file, a file's content for scan's command,
//     with its mode in a trailer.
//   - fsck.go: POST /v1/fsck, the online check streaming its progress.
//   - import.go: POST /v1/import, streaming the import's progress.
//   - export.go: POST /v1/nbd, an NBD export that lives as long as the
//     request (`doppel nbd` on a mounted volume).
//   - status.go: GET /v1/status.
//   - metrics.go: GET /metrics, the Prometheus scrape, which
//     `curl --unix-socket STORE/control.sock http://doppel/metrics` reads
//     too.
package control
