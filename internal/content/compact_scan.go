package content

import (
	"errors"
	"fmt"
	"os"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// chunkMove is one live chunk of a pack being rewritten.
type chunkMove struct {
	hash schema.Hash
	rec  schema.Chunk // as the scan found it
}

// liveChunksOf scans the chunk table for the records naming segs. A
// record that changes after the scan is caught by the moving
// transaction; one created after it is a late chunk (compact_move.go).
func (e *Engine) liveChunksOf(segs []blob.SegmentUse) (map[uint32][]chunkMove, error) {
	want := map[uint32]bool{}
	for _, s := range segs {
		want[s.Num] = true
	}
	out := map[uint32][]chunkMove{}
	err := e.eachChunk(func(h schema.Hash, c schema.Chunk) {
		if !c.IsInline() && want[c.Segment] {
			out[c.Segment] = append(out[c.Segment], chunkMove{hash: h, rec: c})
		}
	})
	return out, err
}

// eachChunk calls fn with every chunk record. A failed page fetch or a
// damaged record fails the whole walk: callers act on what it saw only
// if it saw everything.
func (e *Engine) eachChunk(fn func(schema.Hash, schema.Chunk)) error {
	it, err := e.meta.NewIter(schema.ChunkRange())
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		h, err := schema.ChunkHash(it.Key())
		if err != nil {
			it.Close()
			return fmt.Errorf("chunk key %x: %w", it.Key(), err)
		}
		c, err := schema.DecodeChunk(it.Value())
		if err != nil {
			it.Close()
			return fmt.Errorf("chunk record %x: %w", it.Key(), err)
		}
		fn(h, c)
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}

// sweepOrphans gives back the space of packs written before this session
// that the chunk table does not use: uploads whose commit never came (a
// crash), dead spans the ledger lost, packs a failed deletion left. The
// store's listing is read again first; an error there or in the scan
// stops the sweep before anything is marked dead.
//
// Only packs below SessionStart are swept: every chunk this session
// stores, by a write or by compaction, goes to a pack at or above it, so
// no record naming a swept pack can be created while the sweep runs.
// (Packs of other hosts are the store's Grace's business: Reclaim leaves
// young ones alone.)
func (e *Engine) sweepOrphans(store blob.Compactable) (int64, error) {
	if err := store.Relist(); err != nil {
		return 0, err
	}
	nums, err := e.blobs.Segments()
	if err != nil {
		return 0, err
	}
	end := e.blobs.SessionStart()
	live := map[uint32][]blob.Span{}
	align := blob.AlignmentOf(e.blobs)
	if err := e.eachChunk(func(_ schema.Hash, c schema.Chunk) {
		if !c.IsInline() && c.Segment < end {
			live[c.Segment] = append(live[c.Segment], blob.SpanAt(chunkLoc(c), align))
		}
	}); err != nil {
		return 0, err
	}
	// What no record names is freed below: the records read must be
	// durable, or a crash of the metadata server could bring one back.
	if s, ok := e.meta.(meta.AllSyncer); ok {
		if err := s.SyncAll(); err != nil {
			return 0, err
		}
	}
	var swept int64
	for _, n := range nums {
		if n >= end {
			break
		}
		got, err := e.blobs.Reclaim(n, live[n])
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return swept, err
		}
		swept += got
	}
	return swept, nil
}
