package content

import (
	"slices"
	"sync"
	"time"

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
// soon after a write does not wait for the disk either, up to a budget
// (hostcache_budget.go).

// hostCache counts, per inode, the holders that want its bytes kept.
type hostCache struct {
	mu     sync.Mutex
	kept   map[uint64]int
	budget *cacheWriteBudget // made at the first write of a kept file
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

// hostCaching says whether a chunk is written through the host's page
// cache.
type hostCaching uint8

const (
	cacheNot      hostCaching = iota // the store chooses (large writes go around it)
	cacheAlways                      // through it
	cacheBudgeted                    // through it while the budget has room
)

// MarkHostCached marks chunks, to be written for ino, to go through the
// host's page cache if ino's is kept (KeepHostCache). A sequential
// stream's chunks (streamed) go through it only within the budget
// (hostcache_budget.go): random writes are what a block device reads back
// soon, a bulk copy's bytes the least likely.
func (e *Engine) MarkHostCached(ino uint64, chunks []*Prepared, streamed bool) {
	if !e.keepsHostCache(ino) {
		return
	}
	mark := cacheAlways
	if streamed {
		mark = cacheBudgeted
	}
	for _, p := range chunks {
		p.hostCached = mark
	}
}

// startPutMany starts writing stored, the stored bytes of ps, through the
// host's page cache if the store can and any of ps asks for it (a
// stream's chunks only while the budget has room).
func (e *Engine) startPutMany(ps []*Prepared, stored [][]byte) (*blob.Writing, error) {
	cp, ok := e.blobs.(blob.CachedPutter)
	if !ok {
		return e.blobs.StartPutMany(stored)
	}
	if slices.ContainsFunc(ps, func(p *Prepared) bool { return p.hostCached == cacheAlways }) {
		return cp.StartPutManyCached(stored)
	}
	if slices.ContainsFunc(ps, func(p *Prepared) bool { return p.hostCached == cacheBudgeted }) {
		var n int64
		for _, b := range stored {
			n += int64(len(b))
		}
		if e.cacheBudget().take(n) {
			return cp.StartPutManyCached(stored)
		}
	}
	return e.blobs.StartPutMany(stored)
}

// cacheBudget is the engine's budget of writes through the page cache.
func (e *Engine) cacheBudget() *cacheWriteBudget {
	c := &e.hostCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.budget == nil {
		c.budget = newCacheWriteBudget(hostCacheBudget(), time.Now)
	}
	return c.budget
}
