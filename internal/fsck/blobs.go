package fsck

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/klauspost/compress/zstd"
)

// located is a chunk record with its name, for the pass in location order,
// or an owned block with the record it would have.
type located struct {
	h     schema.Hash
	c     schema.Chunk
	owned bool
}

func (l located) loc() blob.Loc {
	return blob.Loc{Segment: l.c.Segment, Offset: l.c.Offset, Length: l.c.Stored}
}

// checkBlobs checks every chunk's location against the segment files, and
// with VerifyData its bytes, then looks for segment data no chunk uses.
func (c *checker) checkBlobs() error {
	sizes, err := c.segmentSizes()
	if err != nil {
		return err
	}
	list := make([]located, 0, len(c.chunks))
	var total, done int64
	v := verifier{c: c}
	defer v.close()
	for h, ch := range c.chunks {
		switch {
		case ch.bad:
		case ch.rec.IsInline():
			// Its bytes are in its record: no location, nothing to
			// punch, nothing in a segment is its.
			ch.noPunch = true
			if c.opt.VerifyData {
				v.check(located{h: h, c: ch.rec}, []byte(ch.rec.Inline))
			}
		default:
			list = append(list, located{h: h, c: ch.rec})
			total += int64(ch.rec.Stored)
		}
	}
	for loc, b := range c.owned {
		rec := schema.Chunk{Segment: loc.Segment, Offset: loc.Offset, Stored: b.length, Raw: b.length, Refs: 1, Check: b.check, HasCheck: true}
		list = append(list, located{h: b.hash, c: rec, owned: true})
		total += int64(b.length)
	}
	slices.SortFunc(list, func(a, b located) int {
		return cmp.Or(cmp.Compare(a.c.Segment, b.c.Segment), cmp.Compare(a.c.Offset, b.c.Offset), bytes.Compare(a.h[:], b.h[:]))
	})
	var prev located
	for i, l := range list {
		if i > 0 && prev.c.Segment == l.c.Segment && l.c.Offset < prev.c.Offset+uint64(prev.c.Stored) {
			c.damage(l.h, KindChunkOverlap, "chunk %x at offset %d of segment %d overlaps chunk %x at %d", l.h[:8], l.c.Offset, l.c.Segment, prev.h[:8], prev.c.Offset)
			// Punching either would destroy bytes of the other.
			c.keepUnpunched(l)
			c.keepUnpunched(prev)
		}
		if inSeg, whole := c.checkLoc(l, sizes); inSeg {
			// Even a cut-off chunk's bytes are its own, not free space.
			c.live[l.c.Segment] = append(c.live[l.c.Segment], blob.SpanAt(l.loc(), c.align))
			switch {
			case !whole || !c.opt.VerifyData:
			case l.owned && c.unsettled(l.c):
				c.rep.UnsettledBlocks++
			default:
				v.verify(l)
			}
		} else {
			c.keepUnpunched(l) // there is nothing to punch
		}
		if prev.c.Segment != l.c.Segment || l.c.Offset+uint64(l.c.Stored) > prev.c.Offset+uint64(prev.c.Stored) {
			prev = l
		}
		done += int64(l.c.Stored)
		if i%256 == 0 || i == len(list)-1 {
			if err := c.ctx.Err(); err != nil {
				return err
			}
			if c.opt.Progress != nil {
				c.opt.Progress(Progress{Phase: PhaseChunks, Step: c.step, Done: done, Total: total})
			}
		}
	}
	c.checkFreed()
	for num := range sizes {
		if err := c.orphanSpace(num); err != nil {
			return err
		}
	}
	return nil
}

// keepUnpunched marks l's chunk as one a repair that frees it must not
// punch. An owned block is freed by dropping its extent, through the
// content engine, which punches: its damage is reported, not repaired.
func (c *checker) keepUnpunched(l located) {
	if !l.owned {
		c.chunks[l.h].noPunch = true
	}
}

// checkFreed reports pending frees that overlap a live chunk: punching
// them would destroy its bytes. Offline, the others are reported as
// space to reclaim.
func (c *checker) checkFreed() {
	for _, f := range c.freed {
		fs := blob.SpanAt(f, c.align)
		key := schema.FreeKey(f.Segment, f.Offset)
		overlap := false
		for _, l := range c.live[f.Segment] {
			if fs.Start < l.End && l.Start < fs.End {
				c.report(KindFreeOverlap, noIno, "free record for segment %d bytes %d..%d overlaps live chunk %s at %d..%d",
					f.Segment, fs.Start, fs.End, c.chunkAt(f.Segment, l), l.Start, l.End)
				c.deleteEarly(KindFreeOverlap, key, fmt.Sprintf("deleted the free record of segment %d bytes %d..%d without punching", f.Segment, fs.Start, fs.End))
				overlap = true
				break
			}
		}
		if !overlap && !c.online {
			c.rep.ReclaimableBytes += fs.End - fs.Start
			c.reportSev(KindPendingFree, SeverityReclaimable, noIno, "segment %d bytes %d..%d: a freed chunk not punched yet", f.Segment, fs.Start, fs.End)
		}
	}
}

// chunkAt names the chunk occupying span l of segment seg (a rare
// question: a linear search).
func (c *checker) chunkAt(seg uint32, l blob.Span) string {
	for h, ch := range c.chunks {
		loc := located{h: h, c: ch.rec}.loc()
		if !ch.bad && ch.rec.Segment == seg && blob.SpanAt(loc, c.align) == l {
			return fmt.Sprintf("%x", h[:8])
		}
	}
	return "?"
}

// segmentSizes returns the size of every segment: of its file, or what
// the store says (blob.Inspector: pack objects in S3).
func (c *checker) segmentSizes() (map[uint32]int64, error) {
	// A store that other hosts write lists their newer packs only when
	// asked to list again (S3).
	if r, ok := c.s.Blobs.(interface{ Relist() error }); ok {
		if err := r.Relist(); err != nil {
			return nil, err
		}
	}
	nums, err := c.s.Blobs.Segments()
	if err != nil {
		return nil, err
	}
	sizes := map[uint32]int64{}
	insp, _ := c.s.Blobs.(blob.Inspector)
	for _, num := range nums {
		if insp != nil {
			size, err := insp.SegmentSize(num)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			sizes[num] = size
			continue
		}
		st, err := os.Stat(c.segPath(num))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sizes[num] = st.Size()
	}
	c.rep.Segments = int64(len(sizes))
	return sizes, nil
}

// segPath is the file of segment num (see package blob's on-disk format).
func (c *checker) segPath(num uint32) string {
	return filepath.Join(c.s.Dir, "chunks", fmt.Sprintf("seg-%08x", num))
}

// checkLoc reports whether l's location is valid and in an existing
// segment, and whether the segment holds all of it.
func (c *checker) checkLoc(l located, sizes map[uint32]int64) (inSeg, whole bool) {
	size, ok := sizes[l.c.Segment]
	end := l.c.Offset + uint64(l.c.Stored)
	switch {
	case l.c.Segment == 0 || int64(l.c.Offset)%c.align != 0 || end < l.c.Offset:
		c.damage(l.h, KindBadLocation, "chunk %x has location segment %d offset %d", l.h[:8], l.c.Segment, l.c.Offset)
	case !ok:
		c.damage(l.h, KindMissingSegment, "chunk %x is in segment %d, which does not exist", l.h[:8], l.c.Segment)
	case end > uint64(size):
		c.damage(l.h, KindShortChunk, "chunk %x needs bytes %d..%d of segment %d, which has %d", l.h[:8], l.c.Offset, end, l.c.Segment, size)
		return true, false
	default:
		return true, true
	}
	return false, false
}

// damage records that chunk h's stored bytes are wrong; every file using
// it is reported once the files are known.
func (c *checker) damage(h schema.Hash, kind, format string, args ...any) {
	c.damaged[h] = append(c.damaged[h], damage{kind, fmt.Sprintf(format, args...)})
}

// verifier reads chunks back and checks their hashes.
type verifier struct {
	c    *checker
	buf  []byte
	raw  []byte
	zstd *zstd.Decoder
}

func (v *verifier) verify(l located) {
	c := v.c
	stored, err := c.s.Blobs.Read(l.loc(), v.buf)
	switch {
	case errors.Is(err, blob.ErrCorrupt):
		c.damage(l.h, KindShortChunk, "chunk %x: %v", l.h[:8], err)
		return
	case errors.Is(err, os.ErrNotExist):
		c.damage(l.h, KindMissingSegment, "chunk %x: %v", l.h[:8], err)
		return
	case err != nil:
		c.damage(l.h, KindReadError, "chunk %x: %v", l.h[:8], err)
		return
	}
	v.buf = stored[:cap(stored)]
	v.check(l, stored)
}

// check checks l's stored bytes against its record: they decompress to
// its size, and match its hash and check.
func (v *verifier) check(l located, stored []byte) {
	c := v.c
	c.rep.BytesVerified += int64(len(stored))
	raw := stored
	var err error
	if l.c.Comp == schema.CompZstd {
		if v.zstd == nil {
			if v.zstd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1)); err != nil {
				c.damage(l.h, KindReadError, "chunk %x: zstd: %v", l.h[:8], err)
				return
			}
		}
		raw, err = v.zstd.DecodeAll(stored, v.raw[:0])
		if err != nil {
			c.damage(l.h, KindBadHash, "chunk %x in segment %d at %d does not decompress: %v", l.h[:8], l.c.Segment, l.c.Offset, err)
			return
		}
		v.raw = raw
	}
	if seg, off, check, ok := l.h.Provisional(); ok {
		// Named by its place and check until the dedup pass hashes it
		// (docs/BLOCK.md, "Blocks written in place, named later").
		switch {
		case seg != l.c.Segment || off != l.c.Offset || !l.c.HasCheck || check != l.c.Check:
			c.damage(l.h, KindBadHash, "chunk %x in segment %d at %d: its provisional name names segment %d at %d", l.h[:8], l.c.Segment, l.c.Offset, seg, off)
		case len(raw) != int(l.c.Raw) || schema.CheckSum(raw) != check:
			c.damage(l.h, KindBadHash, "chunk %x in segment %d at %d fails its check", l.h[:8], l.c.Segment, l.c.Offset)
		}
		return
	}
	switch {
	case len(raw) != int(l.c.Raw):
		c.damage(l.h, KindBadHash, "chunk %x in segment %d at %d holds %d bytes, its record says %d", l.h[:8], l.c.Segment, l.c.Offset, len(raw), l.c.Raw)
	case schema.Sum(raw) != l.h:
		c.damage(l.h, KindBadHash, "chunk %x in segment %d at %d fails its hash", l.h[:8], l.c.Segment, l.c.Offset)
	case l.c.HasCheck && schema.CheckSum(raw) != l.c.Check:
		c.report(KindBadCheck, noIno, "chunk %x: its record's check %016x does not match its bytes, which match the hash (reads fall back to the hash)", l.h[:8], l.c.Check)
	}
}

func (v *verifier) close() {
	if v.zstd != nil {
		v.zstd.Close()
	}
}
