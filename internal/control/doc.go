// Package control is the daemon's control socket: HTTP over a Unix socket
// in the volume directory, readable by its owner only. The CLI talks to a
// mounted volume through it; when no daemon runs, the CLI opens the store
// itself.
package control
