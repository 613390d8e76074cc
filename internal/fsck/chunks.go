package fsck

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"syscall"

	"github.com/doppelfs/doppel/internal/schema"
)

// chunk is what the check learns about one chunk record.
type chunk struct {
	rec     schema.Chunk
	bad     bool   // the record does not decode
	refs    uint64 // extents naming the chunk
	noPunch bool   // a repair that frees it must not punch its location
	user    uint64 // an inode using it, if it is damaged or miscounted
}

// damage is something wrong with a chunk's stored bytes.
type damage struct{ kind, detail string }

func (c *checker) scanChunks() error {
	return c.scan([]byte{'k'}, []byte{'k' + 1}, func(k, v []byte) {
		h, err := schema.ChunkHash(k)
		if err != nil {
			c.report(KindDecode, noIno, "chunk key %s: %v", shortHex(k), err)
			return
		}
		ch := &chunk{}
		c.chunks[h] = ch
		c.rep.Chunks++
		if ch.rec, err = schema.DecodeChunk(v); err != nil {
			ch.bad, ch.noPunch = true, true
			// Its location is unknown: the files using it lost that data.
			c.damage(h, KindDecode, "chunk %x: record does not decode: %v", h[:8], err)
		}
	})
}

// extentRun accumulates the checks of one inode's extents, which the key
// order delivers together.
type extentRun struct {
	started bool
	ino     uint64
	n       *inode
	end     int64 // end of the furthest extent so far
	pastEOF int   // extents ending beyond the size
	missing int   // extents naming chunks with no record
	first   string
	// dropAll: the inode is missing or no file, a repair drops every extent.
	dropAll  bool
	dropKind string
}

func (c *checker) scanExtents() error {
	var run extentRun
	err := c.scan([]byte{'e'}, []byte{'e' + 1}, func(k, v []byte) {
		off, err := schema.ExtentOffset(k)
		if err != nil {
			c.report(KindDecode, keyIno(k), "extent key %s: %v", shortHex(k), err)
			c.deleteKey(KindDecode, noIno, k, "deleted a malformed extent key")
			return
		}
		ino := be64(k[1:])
		if !run.started || ino != run.ino {
			c.endRun(&run)
			run = extentRun{started: true, ino: ino, n: c.inodes[ino]}
			c.startRun(&run)
		}
		x, err := schema.DecodeExtent(v)
		if err != nil {
			c.report(KindDecode, ino, "extent of inode %d at %d: %v", ino, off, err)
			c.dropExtent(ino, drop{off: off, kind: KindDecode, lost: "the extent record does not decode"})
			return
		}
		c.extent(&run, off, x)
	})
	c.endRun(&run)
	return err
}

func (c *checker) startRun(r *extentRun) {
	switch {
	case r.n == nil:
		c.report(KindDanglingExtent, r.ino, "extents of inode %d, which does not exist", r.ino)
		r.dropAll, r.dropKind = true, KindDanglingExtent
	case !r.n.bad && r.n.typ() != syscall.S_IFREG:
		c.report(KindExtentNotFile, r.ino, "extents of inode %d of type %#o", r.ino, r.n.typ())
		r.dropAll, r.dropKind = true, KindExtentNotFile
	}
}

func (c *checker) extent(r *extentRun, off int64, x schema.Extent) {
	c.rep.Extents++
	c.logical += int64(x.Length)
	end := off + int64(x.Length)
	if off < r.end {
		c.report(KindExtentOverlap, r.ino, "extent at %d overlaps the previous one, which ends at %d", off, r.end)
	}
	r.end = max(r.end, end)
	if n := r.n; n != nil {
		n.mapped += int64(x.Length)
		n.extEnd = max(n.extEnd, end)
		if !n.bad && end > n.rec.Size {
			r.pastEOF++
		}
	}
	d := drop{off: off, length: x.Length, hash: x.Hash}
	ch := c.chunks[x.Hash]
	if x.Owned && !namesPlaceOf(ch, x) {
		c.ownedExtent(r, off, x)
		if r.dropAll {
			d.kind, d.owned = r.dropKind, ownedPlace(x)
			c.dropExtent(r.ino, d)
		}
		return
	}
	switch {
	case ch == nil:
		if r.missing == 0 {
			r.first = fmt.Sprintf("at %d, chunk %x", off, x.Hash[:8])
		}
		r.missing++
		d.kind, d.lost = KindMissingChunk, fmt.Sprintf("chunk %x has no record", x.Hash[:8])
	case !ch.bad && uint64(x.ChunkOff)+uint64(x.Length) > uint64(ch.rec.Raw):
		c.report(KindExtentPastChunk, r.ino, "extent at %d takes bytes %d..%d of chunk %x, which has %d",
			off, x.ChunkOff, uint64(x.ChunkOff)+uint64(x.Length), x.Hash[:8], ch.rec.Raw)
		d.kind, d.lost = KindExtentPastChunk, fmt.Sprintf("the extent reaches past the end of chunk %x", x.Hash[:8])
	}
	if ch != nil {
		ch.refs++
		d.counted = true
	}
	if x.Hint.Has() {
		c.rep.HintedExtents++
		if ch != nil && !ch.bad && staleHint(x.Hint, ch.rec) {
			c.rep.StaleHints++
		}
	}
	if r.dropAll {
		d.kind, d.lost = r.dropKind, "" // no file's data
		c.dropExtent(r.ino, d)
	} else if d.lost != "" {
		c.dropExtent(r.ino, d)
	}
}

func (c *checker) endRun(r *extentRun) {
	if r.missing > 0 {
		c.report(KindMissingChunk, r.ino, "%d extents name chunks with no record (first %s)", r.missing, r.first)
	}
	if r.pastEOF > 0 {
		c.report(KindExtentPastEOF, r.ino, "%d extents end beyond the size %d (the last at %d)", r.pastEOF, r.n.rec.Size, r.end)
		c.fix.sizes[r.ino] = r.end
	}
}

// checkRefs compares refcounts with the extents counted and reports every
// file using a damaged chunk. Finding the files takes a second pass over
// the extents, made only if there is something to report.
func (c *checker) checkRefs() error {
	wrong := map[schema.Hash]bool{}
	for h, ch := range c.chunks {
		// A record whose refcount reached zero should have been deleted.
		if !ch.bad && (ch.refs != ch.rec.Refs || ch.rec.Refs == 0) {
			wrong[h] = true
		}
	}
	if len(wrong) == 0 && len(c.damaged) == 0 {
		return nil
	}
	users := map[schema.Hash][]uint64{}
	err := c.scan([]byte{'e'}, []byte{'e' + 1}, func(k, v []byte) {
		x, err := schema.DecodeExtent(v)
		if err != nil || len(k) != 17 || !wrong[x.Hash] && c.damaged[x.Hash] == nil {
			return
		}
		ino := be64(k[1:])
		if u := users[x.Hash]; len(u) == 0 || u[len(u)-1] != ino {
			users[x.Hash] = append(u, ino)
		}
		if d, ok := lostTo(c.damaged[x.Hash]); ok {
			off, _ := schema.ExtentOffset(k)
			dr := drop{off: off, length: x.Length, hash: x.Hash, counted: true, kind: d.kind, lost: d.detail}
			if x.Owned && !namesPlaceOf(c.chunks[x.Hash], x) {
				dr.counted, dr.owned = false, ownedPlace(x)
			}
			c.dropExtent(ino, dr)
		}
	})
	if err != nil {
		return err
	}
	for h, u := range users {
		if ch := c.chunks[h]; ch != nil { // an owned block's hash may have no record
			ch.user = u[0]
		}
	}
	for h := range wrong {
		ch, u := c.chunks[h], users[h]
		ino := ch.user
		c.report(KindRefcount, ino, "chunk %x has refcount %d, %d extents in %d files reference it", h[:8], ch.rec.Refs, ch.refs, len(u))
	}
	c.reportDamage(users)
	return nil
}

// lostTo returns the damage that makes a chunk's data lost, if any. A read
// error may pass (a flaky disk, a file system remounted read-only): a
// repair does not give the data up for it.
func lostTo(ds []damage) (damage, bool) {
	for _, d := range ds {
		if d.kind != KindReadError {
			return d, true
		}
	}
	return damage{}, false
}

// reportDamage reports every file using a damaged chunk, once per kind of
// damage: a file with many damaged chunks gets one line, not one per chunk.
func (c *checker) reportDamage(users map[schema.Hash][]uint64) {
	type key struct {
		kind string
		ino  uint64
	}
	var keys []key
	first, count := map[key]string{}, map[key]int{}
	hashes := slices.SortedFunc(maps.Keys(c.damaged), func(a, b schema.Hash) int { return bytes.Compare(a[:], b[:]) })
	for _, h := range hashes {
		for _, d := range c.damaged[h] {
			if len(users[h]) == 0 {
				c.report(d.kind, noIno, "%s (no file uses it)", d.detail)
			}
			for _, ino := range users[h] {
				k := key{d.kind, ino}
				if count[k] == 0 {
					keys = append(keys, k)
					first[k] = d.detail
				}
				count[k]++
			}
		}
	}
	for _, k := range keys {
		if n := count[k]; n > 1 {
			c.report(k.kind, k.ino, "%s (the file has %d such chunks)", first[k], n)
		} else {
			c.report(k.kind, k.ino, "%s", first[k])
		}
	}
}

// staleHint reports whether hint h names another place or check than the
// chunk's record rec.
func staleHint(h schema.Hint, rec schema.Chunk) bool {
	return h.Segment != rec.Segment || h.Offset != rec.Offset || (rec.HasCheck && h.Check != rec.Check)
}
