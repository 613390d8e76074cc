// Package mountinfo reads /proc/self/mountinfo: which mount holds a path,
// and which of them are doppel volumes. It depends on the standard library
// only, so that the light `doppel` front command can use it.
package mountinfo
