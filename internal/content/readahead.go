package content

import (
	"math"
	"sync"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Chunk loading is shared: concurrent readers of one chunk (a reader and
// the readahead, or parallel FUSE reads) read and verify it once.
type loads struct {
	mu       sync.Mutex
	inflight map[schema.Hash]*load
	// streams remembers, per inode, where the previous read ended (to spot
	// sequential readers worth reading ahead for) and how far readahead was
	// already started.
	streams map[uint64]stream
	slots   chan struct{} // bounds readahead goroutines
	window  int64         // how far beyond a sequential read chunks are prepared
	// running counts readahead goroutines, which Close waits for: they
	// read the metadata store, which closes after the engine.
	running sync.WaitGroup
}

// stream is what noteRead knows of one inode's readers: where the last
// read ended, how far readahead was started, and how many reads in a row
// continued the one before.
type stream struct {
	lastEnd, aheadTo int64
	run              int
	start            int64 // where the sequential run began
}

// readaheadAfter is how many reads in a row must continue the previous
// one (within the readahead window, since parallel FUSE requests arrive out of
// order) before readahead starts. With one, a random reader of a large
// file started an 8 MiB readahead whenever a read happened to land within
// 8 MiB of the last (6 % of them in a 256 MiB file): random 4 KiB reads of
// an NBD export spent 64 % of the daemon's CPU looking up records ahead.
const readaheadAfter = 3

type load struct {
	done chan struct{}
	data []byte
	err  error
}

// DefaultReadahead is how far beyond a sequential read chunks are
// prepared unless Config.ReadaheadBytes says otherwise: enough for a
// local disk. A store a network away needs more in flight to stream
// (volumes with data in S3 ask for more).
const DefaultReadahead = 8 << 20

func newLoads(window int64) *loads {
	return &loads{inflight: map[schema.Hash]*load{}, streams: map[uint64]stream{}, slots: make(chan struct{}, 4), window: window}
}

// chunkData returns a chunk's raw bytes, from the cache, from a load in
// progress, or from the blob store.
func (e *Engine) chunkData(h schema.Hash) ([]byte, error) {
	return e.chunkDataOf(Piece{Extent: schema.Extent{Hash: h}})
}

// chunkDataOf is chunkData for piece p's chunk, which it loads through
// the hint of the extent p was clipped out of, if it has one.
func (e *Engine) chunkDataOf(p Piece) ([]byte, error) {
	h := p.Hash
	if data, ok := e.cache.get(h); ok {
		e.counters.cacheHits.Add(1)
		return data, nil
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
	if loc, check, ok := e.clippedHint(p); ok {
		c.data, c.err = e.loadHinted(h, loc, check)
	} else {
		c.data, c.err = e.loadChunk(h)
	}
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
// previous one, prepares the chunks just beyond it in the background:
// their records are looked up (one iterator for the window, kept in the
// location cache for the reads to come) unless their extents carry
// location hints (hints.go), and the host is asked to bring their stored
// bytes into its page cache. The reads then copy and verify them without
// waiting for the disk. The window is advanced in steps of half its size,
// so the extents are looked up about once per MiB read rather than on
// every read. It reports whether the read belongs to a
// sequential stream past its first readahead window.
func (e *Engine) noteRead(r meta.Reader, ino uint64, off, end int64) (streaming bool) {
	l := e.loads
	l.mu.Lock()
	st, seen := l.streams[ino]
	if len(l.streams) > 4096 {
		clear(l.streams) // a bound, not an LRU: losing hints only costs readahead
	}
	window := l.window
	sequential := seen && off >= st.lastEnd-window && off <= st.lastEnd+window
	from := max(end, st.aheadTo)
	if !sequential || st.aheadTo < off {
		from = end // a new stream, or one that jumped: start the window afresh
	}
	to := min(end+window, math.MaxInt64)
	if sequential {
		st.run++
	} else {
		st.run, st.start = 0, off
	}
	start := st.run >= readaheadAfter && to-from >= window/2 && e.cfg.VerifyReads
	if start {
		// Without a free slot (readahead is behind: its lookups are slow)
		// the window is not moved, so that a later read starts it from
		// here: moved, its chunks would never be prefetched, and the
		// reads would fetch them one by one.
		select {
		case l.slots <- struct{}{}:
		default:
			start = false
		}
	}
	st.lastEnd = end
	if start {
		st.aheadTo = to
	} else if !sequential {
		st.aheadTo = 0
	}
	l.streams[ino] = st
	streamed := from - st.start
	l.mu.Unlock()
	streaming = sequential && off >= window
	if !start {
		return streaming
	}
	l.running.Add(1)
	go func() {
		defer func() { <-l.slots; l.running.Done() }()
		if e.hostReadahead { // chunks in segment files (inorder.go)
			first, last, empty, err := windowEnds(r, ino, from, to)
			if err != nil || empty || endsInOrder(first, last) || e.endsInMemory(first, last) {
				return
			}
		}
		pieces, err := e.readaheadExtents(r, ino, from, to)
		if err != nil || len(pieces) == 0 {
			return
		}
		hs := make([]schema.Hash, 0, len(pieces))
		locs := make([]blob.Loc, 0, len(pieces))
		for _, p := range pieces {
			if e.cache.c.Contains(p.Hash) {
				continue
			}
			if loc, _, ok := e.wholeChunkHint(p); ok {
				locs = append(locs, loc) // no record to look up
			} else {
				hs = append(hs, p.Hash)
			}
		}
		recs := e.lookupRecords(hs)
		for _, c := range recs {
			if !c.IsInline() { // its bytes came with its record
				locs = append(locs, chunkLoc(c))
			}
		}
		if sp, ok := e.blobs.(blob.StreamPrefetcher); ok {
			sp.PrefetchStream(locs, streamed)
		} else {
			e.blobs.Prefetch(locs)
		}
	}()
	return streaming
}

// readaheadExtents returns ino's extents in [from, to), clipped to it, as
// Extents does, and keeps what it read as an extent window: the reads the
// readahead runs ahead of then find their extents there instead of
// scanning the store again (a round trip each on PostgreSQL).
func (e *Engine) readaheadExtents(r meta.Reader, ino uint64, from, to int64) ([]Piece, error) {
	w := e.windowsFor(r)
	if w == nil {
		return Extents(r, ino, from, to)
	}
	whole, err := w.scan(r, ino, from, to)
	if err != nil {
		return nil, err
	}
	clipped := make([]Piece, len(whole))
	for i, p := range whole {
		clipped[i] = p.clip(from, to)
	}
	return clipped, nil
}
