package s3store

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// packMem is the memory a pack is filled in: where it can be had, an
// anonymous mapping outside the Go heap, so that the packs in flight (up
// to MaxPending+1 of PackSize and its slack) neither count against the
// daemon's memory limit nor make the collector run sooner. Elsewhere it
// is heap memory.
type packMem struct {
	data    []byte // length 0, capacity packCap
	mapped  bool   // data is a mapping, given back by release
	cleanup runtime.Cleanup
}

// newPackMem returns size bytes of pack memory, a mapping if the kernel
// gives one.
func newPackMem(size int) *packMem {
	if m := newMappedPackMem(size); m != nil {
		return m
	}
	return &packMem{data: make([]byte, 0, size)}
}

func newMappedPackMem(size int) *packMem {
	data, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil
	}
	m := &packMem{data: data[:0], mapped: true}
	// A pack dropped without being recycled (a Close whose Sync failed)
	// still gives its mapping back.
	m.cleanup = runtime.AddCleanup(m, func(d []byte) { unix.Munmap(d) }, data)
	return m
}

// release gives the memory back now. Nothing may hold its bytes.
func (m *packMem) release() {
	if !m.mapped {
		return
	}
	m.cleanup.Stop()
	unix.Munmap(m.data[:cap(m.data)])
	m.data, m.mapped = nil, false
}
