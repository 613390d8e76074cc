package content

import (
	"cmp"
	"errors"
	"slices"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/blockhash"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Blocks written in place, named later (docs/BLOCK.md). Where the volume
// allows it (Config.NameLater), a block planned to go over an owned block
// in place is not hashed on the write's path: BLAKE3 was the largest
// share of the CPU of a copy over an export's data. Its extent gets a
// provisional name instead (schema.ProvisionalName: the place and the
// check), and the dedup pass of owned blocks hashes it later and gives
// the extent its hash (nameOwned), before it looks for duplicates.
//
// The rules:
//
//   - A chunk keeps a provisional name only while it is to go to the
//     place the name holds: one stored anywhere else is hashed first
//     (nameByContent; storeLent, placeInPlace).
//   - A provisional name is a chunk name like any other within the
//     volume: the same name means the same bytes (the same place with
//     the same check), so caches, diff and copies work as for hashes. A
//     copy of the block (cp, a clone, a pin) gives it a record under that
//     name (owned.go's promote), which dedup lookups never ask for, since
//     no write computes it: its bytes are not shared with new writes
//     until the block is copied anew after the pass.
//   - Bytes written with a provisional name are always written, even
//     over a block whose name is the same: equal checks are not equal
//     bytes.
//   - The pass renames only an owned extent still as it read it, whose
//     bytes pass its check, that no record names (a copy made since
//     holds the name) and that no pin covers (it would keep a copy of
//     the old extent, holding the name).

// nameInPlaceLater marks the chunks of group that are to go over an
// owned block in place to be named later (hashSpan then leaves them
// unhashed).
func (e *Engine) nameInPlaceLater(group []*Prepared) {
	if !e.nameLater {
		return
	}
	for _, p := range group {
		p.provisional = p.inPlace != nil && p.ownable && p.Len == blob.Align
	}
}

// nameProvisionally sets p's check and its provisional name, after the
// place it is planned to go over.
func (p *Prepared) nameProvisionally() {
	p.check = schema.CheckSum(p.data)
	p.Hash = schema.ProvisionalName(p.inPlace.loc.Segment, p.inPlace.loc.Offset, p.check)
}

// newBytes reports whether chunk p, planned over its owned block, must be
// written there: unless it holds what the block holds by its hash.
func (p *Prepared) newBytes() bool {
	return p.provisional || p.Hash != p.inPlace.hash || p.check != p.inPlace.check
}

// nameByContent gives the chunks of ps that have a provisional name their
// hash: they are stored somewhere other than the place it names.
func nameByContent(ps []*Prepared) {
	var data [][]byte
	var named []*Prepared
	for _, p := range ps {
		if p.provisional {
			data, named = append(data, p.data), append(named, p)
		}
	}
	if len(named) == 0 {
		return
	}
	sums := make([]schema.Hash, len(named))
	blockhash.Sum(data, sums)
	for i, p := range named {
		p.Hash, p.provisional = sums[i], false
	}
}

// nameUndeferred hashes the chunks of ps that have a provisional name but
// are not to go in place (a second copy of a block's bytes in one Store).
func nameUndeferred(ps []*Prepared) {
	var rest []*Prepared
	for _, p := range ps {
		if p.provisional && !p.deferred {
			rest = append(rest, p)
		}
	}
	nameByContent(rest)
}

// nameBatch is how many owned blocks one transaction of nameOwned renames.
const nameBatch = 1024

// nameRun is the most bytes nameOwned reads at once: blocks side by side
// in a segment are read together.
const nameRun = 1 << 20

// nameOwned gives every owned extent with a provisional name its hash: it
// reads the block, checks it, hashes it and, in a transaction, sets the
// extent's hash if the extent is still as it read it and no record names
// it. It returns how many it named and how many it left (changed since
// the walk, failing their check, or copied), and ends early with stop's
// error.
func (e *Engine) nameOwned(stop func() error) (named, skipped int, err error) {
	var all []ownedExtent
	err = eachOwnedExtent(e.meta, func(k []byte, x schema.Extent, derr error) error {
		if len(all)%4096 == 0 {
			if err := stop(); err != nil {
				return err
			}
		}
		off, err := schema.ExtentOffset(k)
		if err != nil || derr != nil || !x.Hash.IsProvisional() {
			return nil // damaged records are fsck's to report
		}
		all = append(all, ownedExtent{ino: schema.OwnerIno(k), off: off, x: x})
		return nil
	})
	if err != nil || len(all) == 0 {
		return 0, 0, err
	}
	// In place order, so that blocks side by side are read together.
	slices.SortFunc(all, func(a, b ownedExtent) int {
		return cmp.Or(cmp.Compare(a.x.Hint.Segment, b.x.Hint.Segment), cmp.Compare(a.x.Hint.Offset, b.x.Hint.Offset))
	})
	buf := make([]byte, nameRun)
	for len(all) > 0 {
		if err := stop(); err != nil {
			return named, skipped, err
		}
		n := min(len(all), nameBatch)
		nn, ns, err := e.nameBlocks(all[:n], buf)
		named, skipped = named+nn, skipped+ns
		if err != nil {
			return named, skipped, err
		}
		all = all[n:]
	}
	return named, skipped, nil
}

// nameBlocks is nameOwned for a batch of owned extents in place order.
func (e *Engine) nameBlocks(batch []ownedExtent, buf []byte) (named, skipped int, err error) {
	hashes := make([]schema.Hash, len(batch))
	ok := make([]bool, len(batch))
	for i := 0; i < len(batch); {
		// A run of blocks that lie side by side.
		j, size := i+1, int(batch[i].x.Length)
		for j < len(batch) && size+int(batch[j].x.Length) <= len(buf) && batch[j].x.Hint.Segment == batch[i].x.Hint.Segment &&
			batch[j].x.Hint.Offset == batch[i].x.Hint.Offset+uint64(size) {
			size += int(batch[j].x.Length)
			j++
		}
		run := blob.Loc{Segment: batch[i].x.Hint.Segment, Offset: batch[i].x.Hint.Offset, Length: uint32(size)}
		data, rerr := e.blobs.Read(run, buf)
		if rerr != nil {
			i = j // unreadable: fsck's to report, reads' to fail
			continue
		}
		var blocks [][]byte
		var at []int
		for k, pos := i, 0; k < j; k++ {
			b := data[pos : pos+int(batch[k].x.Length)]
			pos += len(b)
			if schema.CheckSum(b) == batch[k].x.Hint.Check {
				blocks, at = append(blocks, b), append(at, k)
			}
		}
		sums := make([]schema.Hash, len(blocks))
		blockhash.Sum(blocks, sums)
		for m, k := range at {
			hashes[k], ok[k] = sums[m], true
		}
		i = j
	}
	t, err := e.Begin()
	if err != nil {
		return 0, 0, err
	}
	for i, o := range batch {
		if !ok[i] {
			skipped++
			continue
		}
		renamed, err := t.nameOwnedExtent(o, hashes[i])
		if err != nil {
			t.Abort()
			return 0, 0, err
		}
		if renamed {
			named++
		} else {
			skipped++
		}
	}
	if named == 0 {
		t.Abort()
		return 0, skipped, nil
	}
	return named, skipped, t.Commit(false)
}

// nameOwnedExtent sets owned extent o's hash to h if it is still as the
// walk found it and no record holds its provisional name.
func (t *Tx) nameOwnedExtent(o ownedExtent, h schema.Hash) (bool, error) {
	v, err := t.b.Get(schema.ExtentKey(o.ino, o.off))
	if errors.Is(err, meta.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if cur, derr := schema.DecodeExtent(v); derr != nil || cur != o.x {
		return false, nil
	}
	if t.e.retainer != nil {
		// A pin would keep the old extent: a copy that holds the
		// provisional name, which the block then keeps.
		if keeps, err := t.e.retainer.Keeps(o.ino); err != nil || keeps {
			return false, err
		}
	}
	loc := blob.Loc{Segment: o.x.Hint.Segment, Offset: o.x.Hint.Offset}
	if t.owned[loc] != nil {
		return false, nil // this transaction met the block already
	}
	if named, err := t.recordNames(o.x.Hash, loc); err != nil || named {
		return false, err
	}
	x := o.x
	x.Hash = h
	t.extentsChanged(o.ino, o.off, o.off+int64(x.Length))
	return true, t.setExtent(o.ino, o.off, &x)
}
