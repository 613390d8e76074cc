package fsck

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"syscall"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/schema"
)

// dropExtents deletes the planned extents, one transaction per inode, and
// records the file data lost. The inode's mapped bytes are corrected in
// the same transaction; the chunks' refcounts after (fixRefs).
func (r *repairer) dropExtents() error {
	c := r.c
	for _, ino := range slices.Sorted(maps.Keys(c.fix.drops)) {
		drops := dedupDrops(c.fix.drops[ino])
		n := c.inodes[ino]
		isFile := n != nil && !n.bad && n.typ() == syscall.S_IFREG
		hasData := isFile || (n != nil && n.bad) // a file, as far as anyone knows
		var lost []LostRange
		var err error
		path := c.pathOf(ino)
		for _, d := range drops {
			if n != nil {
				n.mapped -= int64(d.length)
			}
			if ch := c.chunks[d.hash]; d.counted && ch != nil {
				ch.refs--
			}
			if d.lost != "" && hasData {
				l := LostRange{Path: path, Start: d.off, End: d.off + int64(d.length), Why: d.lost}
				if d.length == 0 { // the record does not say: up to the next extent
					if l.End, err = r.nextExtent(ino, d.off, n.rec.Size); err != nil {
						return err
					}
				}
				lost = appendLost(lost, l)
			}
		}
		action := fmt.Sprintf("deleted %d extents", len(drops))
		switch {
		case n == nil:
			action += " of a missing inode"
		case len(lost) > 0:
			action += fmt.Sprintf(" whose data is lost (%d ranges now read as zeros)", len(lost))
		}
		err = r.tx(func(tx *content.Tx) error {
			for _, d := range drops {
				if d.owned.Segment != 0 {
					if err := tx.DropOwnedExtent(ino, d.off, d.owned); err != nil {
						return err
					}
					continue
				}
				if err := tx.DropExtent(ino, d.off, d.length); err != nil {
					return err
				}
			}
			if isFile {
				return setInode(tx, ino, func(rec *schema.Inode) { rec.Mapped = n.mapped })
			}
			return nil
		}, note{kind: drops[0].kind, ino: ino, action: action})
		if err != nil {
			return err
		}
		r.rr.Lost = append(r.rr.Lost, lost...)
	}
	return nil
}

// nextExtent is the offset of ino's first extent after off, or size if
// there is none.
func (r *repairer) nextExtent(ino uint64, off, size int64) (int64, error) {
	_, upper := schema.ExtentRange(ino)
	it, err := r.s.Meta.NewIter(schema.ExtentKey(ino, off+1), upper)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	if !it.First() {
		return max(size, off), it.Error()
	}
	return schema.ExtentOffset(it.Key())
}

// dedupDrops sorts drops by offset and keeps one per extent: the check may
// plan an extent twice (past its chunk's end, and its chunk damaged).
func dedupDrops(ds []drop) []drop {
	slices.SortStableFunc(ds, func(a, b drop) int { return cmp.Compare(a.off, b.off) })
	return slices.CompactFunc(ds, func(a, b drop) bool { return a.off == b.off })
}

// appendLost adds l, merged with the last range if they touch for the
// same reason.
func appendLost(ls []LostRange, l LostRange) []LostRange {
	if n := len(ls); n > 0 && ls[n-1].End == l.Start && ls[n-1].Why == l.Why && l.End > l.Start {
		ls[n-1].End = l.End
		return ls
	}
	return append(ls, l)
}

// fixRefs sets every chunk's refcount to the references left, freeing the
// chunks left with none, and deletes chunk records that do not decode
// (their extents were dropped as lost data).
func (r *repairer) fixRefs() error {
	c := r.c
	hashes := slices.SortedFunc(maps.Keys(c.chunks), func(a, b schema.Hash) int { return bytes.Compare(a[:], b[:]) })
	for _, h := range hashes {
		ch := c.chunks[h]
		if ch.bad {
			if r.c.online {
				continue
			}
			n := note{kind: KindDecode, ino: ch.user, action: fmt.Sprintf("deleted chunk record %x, which does not decode", h[:8])}
			if err := r.tx(func(tx *content.Tx) error { return tx.Batch().Delete(schema.ChunkKey(h)) }, n); err != nil {
				return err
			}
			continue
		}
		if ch.refs == ch.rec.Refs && ch.refs > 0 {
			continue
		}
		kind, action := KindRefcount, fmt.Sprintf("chunk %x: refcount %d -> %d", h[:8], ch.rec.Refs, ch.refs)
		if ch.refs == 0 {
			action = fmt.Sprintf("chunk %x: freed (refcount %d, no reference left)", h[:8], ch.rec.Refs)
			if d, ok := lostTo(c.damaged[h]); ok {
				kind = d.kind
			}
		}
		err := r.tx(func(tx *content.Tx) error {
			return tx.CorrectRefs(h, ch.rec.Segment, ch.rec.Offset, ch.rec.Refs, ch.refs, !ch.noPunch)
		}, note{kind: kind, ino: ch.user, action: action})
		if errors.Is(err, content.ErrChunkChanged) {
			continue // online: freed or stored again since the check
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// nextIno makes the next_ino counter exceed every inode number in use.
func (r *repairer) nextIno() error {
	c := r.c
	if c.nextIno != 0 && c.nextIno > c.maxIno {
		return nil
	}
	next := c.maxIno + 1
	n := note{kind: KindInoBeyondNext, action: fmt.Sprintf("set next_ino to %d", next)}
	if err := r.tx(func(tx *content.Tx) error { return tx.Batch().Set(schema.KeyNextIno, schema.U64(next)) }, n); err != nil {
		return err
	}
	c.nextIno = next
	return nil
}
