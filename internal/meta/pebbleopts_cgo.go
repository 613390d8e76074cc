//go:build cgo

package meta

// offHeapCache: with cgo, Pebble allocates its block cache with malloc,
// outside the Go heap and the daemon's soft memory limit.
const offHeapCache = true
