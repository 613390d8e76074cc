package content

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Dedup of owned blocks, after the fact (docs/BLOCK.md, "Owned blocks").
// A new block is written owned without asking whether another owned
// block holds the same bytes: owned blocks are not in the chunk table,
// which is what dedup lookups ask. A pass in the background finds them:
// it walks the extents for owned ones, sorts them by hash, and makes each
// group of owned blocks with the same bytes (or an owned block whose
// bytes a chunk record holds) share one copy, as an inline dedup would
// have: the others' extents become ordinary references to it, and their
// blocks are freed.

// OwnedDedup is what a pass did.
type OwnedDedup struct {
	Named   int // owned extents given their hash first (provisional.go)
	Owned   int // owned extents found
	Shared  int // of them, made references to another copy
	Skipped int // changed since the walk: left to the next pass
}

// ownedExtent is an owned extent as the walk found it.
type ownedExtent struct {
	ino uint64
	off int64
	x   schema.Extent
}

// ownedDedupBatch is how many extents one transaction changes.
const ownedDedupBatch = 1024

// ownedDedupShare is how many owned extents a walk collects at most
// (about 80 bytes each): a volume with more is walked once per range of
// hashes. A variable for tests.
var ownedDedupShare int64 = 1 << 20

// DedupOwned runs one pass.
func (e *Engine) DedupOwned(ctx context.Context) (OwnedDedup, error) {
	return e.dedupOwned(ctx.Err)
}

// dedupOwned runs one pass that ends early with stop's error, which it
// asks between its steps (owned_dedup_loop.go's passStop).
func (e *Engine) dedupOwned(stop func() error) (OwnedDedup, error) {
	var res OwnedDedup
	before := e.ownedDedup.fresh.Load()
	if e.cfg.NameLater {
		var err error
		if res.Named, res.Skipped, err = e.nameOwned(stop); err != nil {
			return res, err
		}
	}
	e.statsMu.Lock()
	owned := e.stats.OwnedBlocks
	e.statsMu.Unlock()
	parts := min(max(1, (owned+ownedDedupShare-1)/ownedDedupShare), 256)
	for p := range parts {
		// Hashes whose first byte is in [lo, hi).
		lo, hi := int(p*256/parts), int((p+1)*256/parts)
		if err := e.dedupOwnedRange(stop, byte(lo), hi, &res); err != nil {
			return res, err
		}
	}
	return res, e.passDone(before)
}

// dedupOwnedRange runs a pass over the owned extents whose hash begins
// with a byte in [lo, hi).
func (e *Engine) dedupOwnedRange(stop func() error, lo byte, hi int, res *OwnedDedup) error {
	all, err := e.ownedExtents(stop, lo, hi)
	if err != nil {
		return err
	}
	res.Owned += len(all)
	groups, err := e.dedupGroups(all)
	if err != nil {
		return err
	}
	for len(groups) > 0 {
		if err := stop(); err != nil {
			return err
		}
		n, size := 0, 0
		for n < len(groups) && (n == 0 || size+len(groups[n].owned) <= ownedDedupBatch) {
			size += len(groups[n].owned)
			n++
		}
		shared, skipped, err := e.shareOwned(groups[:n])
		if err != nil {
			return err
		}
		res.Shared += shared
		res.Skipped += skipped
		groups = groups[n:]
	}
	return nil
}

// ownedExtents walks the extents for the owned ones whose hash begins
// with a byte in [lo, hi), sorted by hash.
func (e *Engine) ownedExtents(stop func() error, lo byte, hi int) ([]ownedExtent, error) {
	// Sized for the range's share of the volume's owned blocks, so that
	// a walk of millions does not grow its slice a dozen times.
	out := make([]ownedExtent, 0, e.Stats().OwnedBlocks*int64(hi-int(lo))/256+1024)
	err := eachOwnedExtent(e.meta, func(k []byte, x schema.Extent, derr error) error {
		if len(out)%4096 == 0 {
			if err := stop(); err != nil {
				return err
			}
		}
		off, err := schema.ExtentOffset(k)
		if err != nil || derr != nil || x.Hash[0] < lo || int(x.Hash[0]) >= hi {
			return nil // damaged records are fsck's to report
		}
		out = append(out, ownedExtent{ino: schema.OwnerIno(k), off: off, x: x})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b ownedExtent) int {
		return cmp.Or(bytes.Compare(a.x.Hash[:], b.x.Hash[:]), cmp.Compare(a.ino, b.ino), cmp.Compare(a.off, b.off))
	})
	return out, nil
}

// dedupGroup is owned extents with the same bytes.
type dedupGroup struct {
	owned []ownedExtent
}

// dedupGroups returns the groups of all (sorted by hash) that a pass
// changes: two or more owned blocks, or one whose hash has a record.
func (e *Engine) dedupGroups(all []ownedExtent) ([]dedupGroup, error) {
	var groups []dedupGroup
	var ask [][]byte // chunk keys of single owned blocks the filter may hold
	var asked []int
	f := e.lookupFilter()
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].x.Hash == all[i].x.Hash {
			j++
		}
		g := dedupGroup{owned: all[i:j]}
		if j-i > 1 {
			groups = append(groups, g)
		} else if f == nil || f.mayHold(all[i].x.Hash) {
			ask = append(ask, schema.ChunkKey(all[i].x.Hash))
			asked = append(asked, len(groups))
			groups = append(groups, g)
		}
		i = j
	}
	if len(ask) == 0 {
		return groups, nil
	}
	recs, err := getRecords(e.meta, ask)
	if err != nil {
		return nil, err
	}
	keep := groups[:0]
	next := 0
	for gi, g := range groups {
		if next < len(asked) && asked[next] == gi {
			next++
			if recs[next-1] == nil {
				continue // a block of its own
			}
		}
		keep = append(keep, g)
	}
	return keep, nil
}

// getRecords reads the records of keys from r (nil for a missing one),
// multiGetBatch keys a request where r can (meta.MultiGetter), as
// getChunkRecords does.
func getRecords(r meta.Reader, keys [][]byte) ([][]byte, error) {
	out := make([][]byte, 0, len(keys))
	if many, ok := r.(meta.MultiGetter); ok {
		for start := 0; start < len(keys); start += multiGetBatch {
			vals, err := many.GetMany(keys[start:min(start+multiGetBatch, len(keys))])
			if err != nil {
				return nil, err
			}
			out = append(out, vals...)
		}
		return out, nil
	}
	out = out[:len(keys)]
	for i, k := range keys {
		v, err := r.Get(k)
		if err != nil && !errors.Is(err, meta.ErrNotFound) {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// shareOwned makes, in one transaction, every owned extent of groups that
// is still as the walk found it a reference to one copy of its bytes: the
// chunk record's, or else the group's first block's, which a record at
// its place then names. It returns how many extents it changed and how
// many it left because they changed meanwhile.
func (e *Engine) shareOwned(groups []dedupGroup) (shared, skipped int, err error) {
	t, err := e.Begin()
	if err != nil {
		return 0, 0, err
	}
	for _, g := range groups {
		target, owned, s, err := t.dedupTarget(g)
		if err != nil {
			t.Abort()
			return 0, 0, err
		}
		skipped += s
		for _, o := range owned {
			if err := t.shareWith(o, target); err != nil {
				t.Abort()
				return 0, 0, err
			}
			shared++
		}
	}
	if shared == 0 {
		t.Abort()
		return 0, skipped, nil
	}
	return shared, skipped, t.Commit(false)
}

// dedupTarget returns the extent that group g's owned extents are to
// reference and those of them to change: each still owned as the walk
// found it and not at the target's place. The target is the chunk
// record's copy if the table holds the hash, else the first owned block
// still there.
func (t *Tx) dedupTarget(g dedupGroup) (schema.Extent, []ownedExtent, int, error) {
	var live []ownedExtent
	skipped := 0
	for _, o := range g.owned {
		v, err := t.b.Get(schema.ExtentKey(o.ino, o.off))
		if err != nil && !errors.Is(err, meta.ErrNotFound) {
			return schema.Extent{}, nil, 0, err
		}
		if cur, derr := schema.DecodeExtent(v); err != nil || derr != nil || cur != o.x {
			skipped++
			continue
		}
		live = append(live, o)
	}
	h := g.owned[0].x.Hash
	switch rec, err := t.b.Get(schema.ChunkKey(h)); {
	case err == nil:
		c, err := schema.DecodeChunk(rec)
		if err != nil {
			return schema.Extent{}, nil, 0, fmt.Errorf("chunk %s: %w", h.Short(), err)
		}
		if !storedWhole(c, g.owned[0].x.Length) {
			return schema.Extent{}, nil, skipped, nil // stored otherwise: no place to give the extents
		}
		target := schema.Extent{Hash: h, Length: c.Raw, Hint: schema.Hint{Segment: c.Segment, Offset: c.Offset, Check: c.Check}}
		return target, slices.DeleteFunc(live, func(o ownedExtent) bool { return o.x.Hint == target.Hint }), skipped, nil
	case !errors.Is(err, meta.ErrNotFound):
		return schema.Extent{}, nil, 0, err
	}
	if len(live) < 2 {
		return schema.Extent{}, nil, skipped, nil // nothing left to share with
	}
	return live[0].x, live[1:], skipped, nil
}

// shareWith makes owned extent o a reference to target's copy of the same
// bytes: o's block is dropped (freed at commit, nothing else naming it),
// and a target that is owned gets a record at its place (owned.go).
func (t *Tx) shareWith(o ownedExtent, target schema.Extent) error {
	t.unref(Piece{Off: o.off, Extent: o.x})
	return t.put(o.ino, Piece{Off: o.off, Extent: target})
}
