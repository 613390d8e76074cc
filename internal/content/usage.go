package content

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// RefTally counts the extent references a set of files holds on each chunk,
// to tell which chunks the set shares with the rest of the volume. A
// chunk's refcount counts extents, and an extent may cover only part of a
// chunk, so a chunk is the set's alone exactly when the set holds as many
// of its references as the refcount says.
type RefTally struct {
	owned map[schema.Hash]uint64
	// blocks are the owned blocks (owned.go) the set's extents own, by
	// location: they may have no record, or one a copy gave them.
	blocks map[blob.Loc]tallyBlock
}

// tallyBlock is an owned block in a tally.
type tallyBlock struct {
	hash   schema.Hash
	length uint32
	inSet  bool // the set's reference goes with it (AddFile's owned)
}

// NewRefTally returns an empty tally.
func NewRefTally() *RefTally {
	return &RefTally{owned: map[schema.Hash]uint64{}, blocks: map[blob.Loc]tallyBlock{}}
}

// FileExtents is what AddFile learned about one file's extent map.
type FileExtents struct {
	Pieces      []Piece // in file order; only when asked for
	Mapped      int64   // bytes the extents cover (holes excluded)
	RecordBytes int64   // size of the extent records (keys and values)
}

// AddFile tallies every extent of ino as r has it. With owned, the
// references go away with the set (the set holds every link of the file);
// without, they only make the chunks part of the set's footprint, as a
// file that stays behind still uses them. keep returns the extents too.
func (t *RefTally) AddFile(r meta.Reader, ino uint64, owned, keep bool) (FileExtents, error) {
	var fe FileExtents
	it, err := r.NewIter(schema.ExtentRange(ino))
	if err != nil {
		return fe, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		p, err := piece(it)
		if err != nil {
			it.Close()
			return fe, fmt.Errorf("inode %d: %w", ino, err)
		}
		if loc, _, ok := ownedLoc(p); ok && p.Owned {
			t.blocks[blob.Loc{Segment: loc.Segment, Offset: loc.Offset}] = tallyBlock{hash: p.Hash, length: p.Length, inSet: owned}
		} else if owned {
			t.owned[p.Hash]++
		} else if _, ok := t.owned[p.Hash]; !ok {
			t.owned[p.Hash] = 0
		}
		fe.Mapped += int64(p.Length)
		fe.RecordBytes += int64(len(it.Key()) + len(it.Value()))
		if keep {
			fe.Pieces = append(fe.Pieces, p)
		}
	}
	return fe, it.Close()
}

// ChunkRefs is a tallied chunk: its record and the references the set
// owns.
type ChunkRefs struct {
	Hash schema.Hash
	schema.Chunk
	Owned uint64
}

// Exclusive reports whether no reference to the chunk comes from outside
// the set: deleting the set would free it.
func (c ChunkRefs) Exclusive() bool { return c.Owned >= c.Refs }

// Each calls fn for every tallied chunk, in hash order, with its record
// from r. One iterator walks the chunk table forward instead of a point
// lookup per chunk.
// An owned block is tallied as the record that names its place, if there
// is one, else as a chunk of its own with one reference.
func (t *RefTally) Each(r meta.Reader, fn func(ChunkRefs)) error {
	blocks := map[schema.Hash][]blob.Loc{}
	for loc, b := range t.blocks {
		blocks[b.hash] = append(blocks[b.hash], loc)
	}
	hashes := make([]schema.Hash, 0, len(t.owned)+len(blocks))
	for h := range t.owned {
		hashes = append(hashes, h)
	}
	for h := range blocks {
		if _, ok := t.owned[h]; !ok {
			hashes = append(hashes, h)
		}
	}
	slices.SortFunc(hashes, func(a, b schema.Hash) int { return bytes.Compare(a[:], b[:]) })
	it, err := r.NewIter(schema.ChunkRange())
	if err != nil {
		return err
	}
	for _, h := range hashes {
		_, counted := t.owned[h]
		c, err := chunkAt(it, h)
		if err != nil && (counted || !errors.Is(err, ErrCorrupt)) {
			it.Close()
			return err
		}
		found := err == nil
		n := t.owned[h]
		for _, loc := range blocks[h] {
			b := t.blocks[loc]
			if found && !c.IsInline() && c.Segment == loc.Segment && c.Offset == loc.Offset {
				counted = true // promoted: the owner counts in the record
				if b.inSet {
					n++
				}
				continue
			}
			own := ChunkRefs{Hash: h, Chunk: schema.Chunk{Segment: loc.Segment, Offset: loc.Offset, Stored: b.length, Raw: b.length, Refs: 1}}
			if b.inSet {
				own.Owned = 1
			}
			fn(own)
		}
		if counted {
			fn(ChunkRefs{Hash: h, Chunk: c, Owned: n})
		}
	}
	return it.Close()
}

// chunkAt reads chunk h's record, moving it forward over the chunk table.
func chunkAt(it meta.Iterator, h schema.Hash) (schema.Chunk, error) {
	key := schema.ChunkKey(h)
	if !it.SeekGE(key) || !bytes.Equal(it.Key(), key) {
		if err := it.Error(); err != nil {
			return schema.Chunk{}, err // the store failed; nothing is known missing
		}
		return schema.Chunk{}, fmt.Errorf("%w: chunk %s is referenced but not in the chunk table (run doppel fsck)", ErrCorrupt, h.Short())
	}
	c, err := schema.DecodeChunk(it.Value())
	if err != nil {
		return c, fmt.Errorf("chunk %s: %w", h.Short(), err)
	}
	return c, nil
}

// ChunkUsage is the chunk space a set of files uses.
type ChunkUsage struct {
	Chunks          int64 `json:"chunks"`           // distinct chunks referenced
	RawBytes        int64 `json:"raw_bytes"`        // their size before compression
	PhysicalBytes   int64 `json:"physical_bytes"`   // their size as stored
	ExclusiveChunks int64 `json:"exclusive_chunks"` // chunks referenced from the set only
	ExclusiveBytes  int64 `json:"exclusive_bytes"`  // their stored size: what deleting the set frees
}

// Sum adds up the tallied chunks' space as r has it.
func (t *RefTally) Sum(r meta.Reader) (ChunkUsage, error) {
	var u ChunkUsage
	err := t.Each(r, func(c ChunkRefs) {
		u.Chunks++
		u.RawBytes += int64(c.Raw)
		u.PhysicalBytes += int64(c.Stored)
		if c.Exclusive() {
			u.ExclusiveChunks++
			u.ExclusiveBytes += int64(c.Stored)
		}
	})
	return u, err
}
