//go:build !cgo

package meta

// offHeapCache: without cgo, Pebble's block cache is Go memory, counted
// against the daemon's soft memory limit; it keeps the smallest size.
const offHeapCache = false
