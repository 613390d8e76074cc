//go:build !amd64 || purego

package chunker

func scan(p []byte, fp, mask uint64) (int, uint64) { return scanGeneric(p, fp, mask) }
