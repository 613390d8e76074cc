package content

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// locCache remembers chunk records that readahead looked up, so that the
// read that follows does not ask the metadata store again (a point lookup
// per chunk is a tenth of a cold read's CPU).
//
// An entry can go stale: a chunk freed and stored again later lives
// elsewhere. A stale location holds punched-out bytes or another chunk
// (freed blocks take new chunks: blob.SlotReuser), which fail the
// chunk's hash; reads that used a cached record therefore retry with a
// fresh one when verification fails, and the cache is used only while
// reads are verified.
type locCache struct {
	c *lru.Cache[schema.Hash, schema.Chunk]
}

// locCacheEntries covers about 1 GiB of 64 KiB chunks in about 1 MiB.
const locCacheEntries = 16 << 10

func newLocCache() *locCache {
	c, _ := lru.New[schema.Hash, schema.Chunk](locCacheEntries)
	return &locCache{c: c}
}

// chunkRecord returns chunk h's record, from the cache (cached true) or
// from the metadata store.
func (e *Engine) chunkRecord(h schema.Hash) (c schema.Chunk, cached bool, err error) {
	if e.cfg.VerifyReads {
		if c, ok := e.locs.c.Get(h); ok {
			return c, true, nil
		}
	}
	v, err := e.meta.Get(schema.ChunkKey(h))
	if errors.Is(err, meta.ErrNotFound) {
		return c, false, &ChunkError{Hash: h, Err: fmt.Errorf("%w: referenced but not in the chunk table", ErrCorrupt)}
	}
	if err != nil {
		return c, false, &ChunkError{Hash: h, Err: err}
	}
	if c, err = schema.DecodeChunk(v); err != nil {
		return c, false, &ChunkError{Hash: h, Err: fmt.Errorf("%w: chunk record: %v", ErrCorrupt, err)}
	}
	return c, false, nil
}

// lookupRecords reads the records of the chunks in hs that the cache does
// not hold (recordsOf) and caches them. Chunks without a record are
// skipped: reads report them.
func (e *Engine) lookupRecords(hs []schema.Hash) []schema.Chunk {
	var missing []schema.Hash
	for _, h := range hs {
		if !e.locs.c.Contains(h) {
			missing = append(missing, h)
		}
	}
	if len(missing) > 0 {
		e.recordsOf(missing, func(h schema.Hash, c schema.Chunk) { e.locs.c.Add(h, c) })
	}
	return e.cachedRecords(hs)
}

// multiGetBatch bounds the keys of one GetMany.
const multiGetBatch = 1024

// recordsOf reads the records of chunks hs from the metadata store and
// calls found for each that exists and decodes: with GetMany where the
// store has it (one round trip per batch instead of one per page an
// iterator fetches between scattered hashes), else with one iterator in
// hash order. It stops quietly at a failure: a hint only, the reads look
// the rest up themselves.
func (e *Engine) recordsOf(hs []schema.Hash, found func(schema.Hash, schema.Chunk)) {
	hs = slices.Clone(hs)
	slices.SortFunc(hs, func(a, b schema.Hash) int { return bytes.Compare(a[:], b[:]) })
	hs = slices.Compact(hs)
	if mg, ok := e.meta.(meta.MultiGetter); ok {
		getChunkRecords(mg, hs, func(h schema.Hash, rec []byte) {
			if c, err := schema.DecodeChunk(rec); err == nil {
				found(h, c)
			}
		})
		return
	}
	lower, upper := schema.ChunkRange()
	it, err := e.meta.NewIter(lower, upper)
	if err != nil {
		return
	}
	defer it.Close()
	for _, h := range hs {
		key := schema.ChunkKey(h)
		if !it.SeekGE(key) || !bytes.Equal(it.Key(), key) {
			if it.Error() != nil {
				return
			}
			continue
		}
		if c, err := schema.DecodeChunk(it.Value()); err == nil {
			found(h, c)
		}
	}
}

// getChunkRecords reads the records of chunks hs with GetMany,
// multiGetBatch keys a request, and calls fn for each that exists. It
// stops at the first failure, after the batches before it.
func getChunkRecords(mg meta.MultiGetter, hs []schema.Hash, fn func(h schema.Hash, rec []byte)) error {
	for start := 0; start < len(hs); start += multiGetBatch {
		batch := hs[start:min(start+multiGetBatch, len(hs))]
		keys := make([][]byte, len(batch))
		for i, h := range batch {
			keys[i] = schema.ChunkKey(h)
		}
		vals, err := mg.GetMany(keys)
		if err != nil {
			return err
		}
		for i, v := range vals {
			if v != nil {
				fn(batch[i], v)
			}
		}
	}
	return nil
}

func (e *Engine) cachedRecords(hs []schema.Hash) []schema.Chunk {
	out := make([]schema.Chunk, 0, len(hs))
	for _, h := range hs {
		if c, ok := e.locs.c.Peek(h); ok {
			out = append(out, c)
		}
	}
	return out
}

func chunkLoc(c schema.Chunk) blob.Loc {
	return blob.Loc{Segment: c.Segment, Offset: c.Offset, Length: c.Stored}
}
