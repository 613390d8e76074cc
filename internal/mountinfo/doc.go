// Package mountinfo reads /proc/self/mountinfo: which mount holds a path,
// and which of them are doppel volumes (mountinfo.go); and aborts the
// FUSE connection of a mount whose daemon does not answer (abort.go). It
// depends on the standard library only, so that the light `doppel` front
// command can use it.
package mountinfo
