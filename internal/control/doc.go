// Package control is the daemon's control socket: HTTP over a Unix socket
// in the volume directory, readable by its owner only. The CLI talks to a
// mounted volume through it; when no daemon runs, the CLI opens the store
// itself.
//
// Routes: GET /v1/space (df), POST /v1/sync, GET /v1/status (status.go),
// POST /v1/fsck, the online check streaming its progress (fsck.go), and
// GET /metrics, the Prometheus scrape (metrics.go), which
// `curl --unix-socket STORE/control.sock http://doppel/metrics` reads too.
package control
