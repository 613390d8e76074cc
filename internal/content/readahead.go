package content

import (
	"math"
	"sync"

	"github.com/doppelfs/doppel/internal/schema"
)

// Chunk loading is shared: concurrent readers of one chunk (a reader and
// the readahead, or parallel FUSE reads) read and verify it once.
type loads struct {
	mu       sync.Mutex
	inflight map[schema.Hash]*load
	// lastEnd remembers where each inode's previous read ended, to spot
	// sequential readers worth reading ahead for.
	lastEnd map[uint64]int64
	slots   chan struct{} // bounds background loads
}

type load struct {
	done chan struct{}
	data []byte
	err  error
}

// readaheadBytes is how far beyond a sequential read chunks are loaded.
const readaheadBytes = 2 << 20

func newLoads() *loads {
	return &loads{inflight: map[schema.Hash]*load{}, lastEnd: map[uint64]int64{}, slots: make(chan struct{}, 4)}
}

// chunkData returns a chunk's raw bytes, from the cache, from a load in
// progress, or from the blob store.
func (e *Engine) chunkData(h schema.Hash) ([]byte, error) {
	if p, ok := e.cache.get(h); ok {
		e.counters.cacheHits.Add(1)
		return p, nil
	}
	e.counters.cacheMiss.Add(1)
	l := e.loads
	l.mu.Lock()
	if c, ok := l.inflight[h]; ok {
		l.mu.Unlock()
		<-c.done
		return c.data, c.err
	}
	c := &load{done: make(chan struct{})}
	l.inflight[h] = c
	l.mu.Unlock()
	c.data, c.err = e.loadChunk(h)
	if c.err == nil {
		e.cache.add(h, c.data)
	}
	l.mu.Lock()
	delete(l.inflight, h)
	l.mu.Unlock()
	close(c.done)
	return c.data, c.err
}

// noteRead records a read of [off, end) of ino and, when it continues the
// previous one, loads the chunks just beyond it in the background.
func (e *Engine) noteRead(ino uint64, off, end int64) {
	l := e.loads
	l.mu.Lock()
	prev, seen := l.lastEnd[ino]
	if len(l.lastEnd) > 4096 {
		clear(l.lastEnd) // a bound, not an LRU: losing hints only costs readahead
	}
	l.lastEnd[ino] = end
	l.mu.Unlock()
	if !seen || off < prev-readaheadBytes || off > prev+readaheadBytes {
		return
	}
	pieces, err := Extents(e.meta, ino, end, min(end+readaheadBytes, math.MaxInt64))
	if err != nil {
		return
	}
	for _, p := range pieces {
		if _, ok := e.cache.get(p.Hash); ok {
			continue
		}
		select {
		case l.slots <- struct{}{}:
		default:
			return // enough loads in flight
		}
		go func(h schema.Hash) {
			defer func() { <-l.slots }()
			e.chunkData(h)
		}(p.Hash)
	}
}
