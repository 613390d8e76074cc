// Package wire is the control socket's protocol without the daemon's
// dependencies: the socket's name, the requests light clients send, the
// error replies, and a client that dials the socket. The `doppel` front
// command links only this (and the standard library), so that a command
// answered by a mounted volume's daemon, like `doppel clone`, starts in a
// few milliseconds instead of paying for the storage engine's package
// initialization.
package wire
