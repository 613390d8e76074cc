package content

import (
	"sync"

	"github.com/doppelfs/doppel/internal/blob"
)

// Reads of a file that a kernel page cache holds above doppel (a FUSE
// mount) tell the host to drop the segment bytes a streaming reader read
// (Forget), so that the bytes are not cached twice. A block export has no
// such cache above it: a file kept here (KeepHostCache) leaves the host's
// page cache of its chunks alone, so that what was read once is read
// again from memory, as qemu-nbd's reads of its image file are. Its new
// chunks are written through the host's page cache too, where the store
// would otherwise write around it (blob.CachedPutter), so that a read
// soon after a write does not wait for the disk either.

// hostCache counts, per inode, the holders that want its bytes kept.
type hostCache struct {
	mu   sync.Mutex
	kept map[uint64]int
}

// KeepHostCache keeps the host's page cache of ino's stored bytes until
// release is called (once per call).
func (e *Engine) KeepHostCache(ino uint64) (release func()) {
	c := &e.hostCache
	c.mu.Lock()
	if c.kept == nil {
		c.kept = map[uint64]int{}
	}
	c.kept[ino]++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			if c.kept[ino]--; c.kept[ino] <= 0 {
				delete(c.kept, ino)
			}
			c.mu.Unlock()
		})
	}
}

// keepsHostCache reports whether ino's bytes are kept (KeepHostCache).
func (e *Engine) keepsHostCache(ino uint64) bool {
	c := &e.hostCache
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kept[ino] > 0
}

// MarkHostCached marks chunks, to be written for ino, to go through the
// host's page cache if ino's is kept (KeepHostCache).
func (e *Engine) MarkHostCached(ino uint64, chunks []*Prepared) {
	if !e.keepsHostCache(ino) {
		return
	}
	for _, p := range chunks {
		p.hostCached = true
	}
}

// startPutMany starts writing stored, the stored bytes of ps, through the
// host's page cache if any of ps asks for it and the store can.
func (e *Engine) startPutMany(ps []*Prepared, stored [][]byte) (*blob.Writing, error) {
	if cp, ok := e.blobs.(blob.CachedPutter); ok {
		for _, p := range ps {
			if p.hostCached {
				return cp.StartPutManyCached(stored)
			}
		}
	}
	return e.blobs.StartPutMany(stored)
}
