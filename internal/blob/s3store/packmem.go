package s3store

import (
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// packMem is the memory a pack is filled in: where it can be had, a
// shared mapping of a memfd, so that the pack's upload hands its pages to
// the socket with sendfile (sendfile.go, sendfileClient) instead of copying
// them through net/http's 32 KiB buffer and again into the kernel. That
// halved the client's CPU per byte PUT (BenchmarkPutPacks) and was a
// sixth of the daemon's CPU on a streaming write. Elsewhere it is heap
// memory, uploaded as before.
type packMem struct {
	data    []byte   // length 0, capacity packCap
	file    *os.File // the memfd behind data; nil for heap memory
	cleanup runtime.Cleanup
}

// newPackMem returns size bytes of pack memory, a memfd's mapping if the
// kernel gives one.
func newPackMem(size int) *packMem {
	if m := newMappedPackMem(size); m != nil {
		return m
	}
	return &packMem{data: make([]byte, 0, size)}
}

func newMappedPackMem(size int) *packMem {
	fd, err := unix.MemfdCreate("doppel-pack", unix.MFD_CLOEXEC)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), "doppel-pack")
	if unix.Ftruncate(fd, int64(size)) != nil {
		f.Close()
		return nil
	}
	data, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil
	}
	m := &packMem{data: data[:0], file: f}
	// A pack dropped without being recycled (a Close whose Sync failed)
	// still gives its mapping back; the file closes itself.
	m.cleanup = runtime.AddCleanup(m, func(d []byte) { unix.Munmap(d) }, data)
	return m
}

// fileOf returns the memfd whose bytes buf is, or nil: buf must start at
// the mapping (an append past its capacity moves a slice to the heap).
func (m *packMem) fileOf(buf []byte) *os.File {
	if m == nil || m.file == nil || cap(buf) == 0 || unsafe.SliceData(buf) != unsafe.SliceData(m.data) {
		return nil
	}
	return m.file
}

// release gives the memory back now. Nothing may hold its bytes.
func (m *packMem) release() {
	if m.file == nil {
		return
	}
	m.cleanup.Stop()
	unix.Munmap(m.data[:cap(m.data)])
	m.file.Close()
	m.data, m.file = nil, nil
}
