package s3store

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/blob"
)

// The ring on disk.
//
// STOREDIR/cache holds the files slab-0000 ... slab-NNNN (ringShape: a
// 1 GiB cache is 16 slabs of 64 MiB), each at most slabSize bytes: records
// one after the other from offset 0, each starting at an Align boundary:
//
//	header, headerSize (64) bytes, big endian:
//	  "doppelr2", seq (u64), segment (u32), length (u32), offset (u64),
//	  24 zero bytes, XXH3 of the 56 bytes before it (u64)
//	the range's bytes (length)
//	an XXH3 of each cacheBlock of them, seeded with seq (8 bytes each)
//	zeros up to the next Align boundary
//
// seq grows with every record written. Opening scans each slab for
// headers (scan), indexes what it found (the newest record of a range
// wins) and puts the head after the newest record. Headers are checked
// when the cache opens; the bytes when they are read. A record the head
// overwrote while a read was under way fails the read's check, which is
// a miss, never wrong bytes: also when the head laid a record of the
// same size at the same place, whose bytes and sums agree with each
// other, because the sums are seeded with the seq of the record they
// were written for (until 2026-11-29 they were not, and such a read
// returned the other record's bytes; "doppelrc" was that layout's magic).

const headerSize = 64

var ringMagic = [8]byte{'d', 'o', 'p', 'p', 'e', 'l', 'r', '2'}

// maxSlab is the largest slab: the ring of a large cache is many slabs,
// so that a lap frees space a slab at a time.
const maxSlab = 64 << 20

// ringShape is the number and size of the slabs of a cache of limit bytes:
// at least four slabs (so that a hit has time to promote its record), of
// at most maxSlab.
func ringShape(limit int64) (n int, size int64) {
	size = min(maxSlab, max(blob.Align, (limit/4)&^(blob.Align-1)))
	return int(max(1, limit/size)), size
}

// cacheRecordSize is the size on disk of the record of a range of n bytes.
func cacheRecordSize(n uint32) int64 {
	return roundUp(headerSize + int64(n) + sumSize*int64((uint64(n)+cacheBlock-1)/cacheBlock))
}

// ringPos is a place in the ring.
type ringPos struct {
	slab int
	off  int64
}

// slab is one file of the ring.
type slab struct {
	f    *os.File  // reads, and writes where direct ones are refused
	d    *os.File  // O_DIRECT writes, or nil
	recs []*record // the records in the file, by offset (indexed or not)
}

// recBuf is a record being built: whole is aligned and recordSize long,
// data its range's bytes within it.
type recBuf struct {
	whole []byte
	data  []byte
}

// recordBuf returns a recBuf for a range of n bytes.
func recordBuf(n int) *recBuf {
	w := blob.AlignedBuf(int(cacheRecordSize(uint32(n))))
	return &recBuf{whole: w, data: w[headerSize : headerSize+n]}
}

func slabName(i int) string { return fmt.Sprintf("slab-%04d", i) }

// openSlabs opens (or creates) the n slab files, removes every other file
// of the directory, and indexes the records found.
func (c *cache) openSlabs(n int) error {
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		var i int
		if _, err := fmt.Sscanf(e.Name(), "slab-%04d", &i); err != nil || e.Name() != slabName(i) || i >= n {
			os.Remove(filepath.Join(c.dir, e.Name())) // an earlier layout's file, or a stranger
		}
	}
	var all []*record
	for i := range n {
		sl, err := c.openSlab(i)
		if err != nil {
			return err
		}
		c.slabs = append(c.slabs, sl)
		sl.recs = c.scan(sl.f, i)
		all = append(all, sl.recs...)
	}
	slices.SortFunc(all, func(a, b *record) int { return cmp.Compare(a.seq, b.seq) })
	for _, r := range all {
		c.index(r)
		c.seq, c.head = r.seq, ringPos{r.pos.slab, r.pos.off + r.size}
	}
	return nil
}

func (c *cache) openSlab(i int) (*slab, error) {
	path := filepath.Join(c.dir, slabName(i))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if info, err := f.Stat(); err != nil || info.Size() > c.slabSize {
		if err == nil {
			err = f.Truncate(c.slabSize) // the cache was made smaller
		}
		if err != nil {
			f.Close()
			return nil, err
		}
	}
	sl := &slab{f: f}
	if c.direct.Load() {
		d, err := os.OpenFile(path, os.O_WRONLY|unix.O_DIRECT, 0)
		switch {
		case err == nil:
			sl.d = d
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.EOPNOTSUPP):
			c.direct.Store(false)
		default:
			f.Close()
			return nil, err
		}
	}
	return sl, nil
}

// scan finds the records of slab i: from offset 0, each valid header's
// record is followed by the next; where there is no valid header (a newer
// record ended inside an older one, or the tail of a torn write), the
// scan goes on at the next Align boundary. A valid header found so is
// always whole with its record: records are written in order from offset
// 0, so a newer write that reached an older record's bytes also covered
// its header. The data is checked when it is read.
func (c *cache) scan(f *os.File, i int) []*record {
	var recs []*record
	win := make([]byte, 1<<20) // bytes [winOff, winOff+winLen) of the file
	winOff, winLen := int64(0), 0
	for off := int64(0); off+headerSize <= c.slabSize; {
		if off < winOff || off+headerSize > winOff+int64(winLen) {
			n, _ := f.ReadAt(win, off) // a short read is the end of the file
			if n < headerSize {
				break // the end, or an error: the rest is not indexed
			}
			winOff, winLen = off, n
		}
		r, ok := parseHeader(win[off-winOff : off-winOff+headerSize])
		if !ok || off+r.size > c.slabSize {
			off += blob.Align
			continue
		}
		r.pos = ringPos{i, off}
		recs = append(recs, r)
		off += r.size
	}
	return recs
}

func putHeader(b []byte, r *record) {
	copy(b, ringMagic[:])
	binary.BigEndian.PutUint64(b[8:], r.seq)
	binary.BigEndian.PutUint32(b[16:], r.loc.Segment)
	binary.BigEndian.PutUint32(b[20:], r.loc.Length)
	binary.BigEndian.PutUint64(b[24:], r.loc.Offset)
	clear(b[32:56])
	binary.BigEndian.PutUint64(b[56:], xxh3.Hash(b[:56]))
}

func parseHeader(b []byte) (*record, bool) {
	if [8]byte(b[:8]) != ringMagic || binary.BigEndian.Uint64(b[56:]) != xxh3.Hash(b[:56]) {
		return nil, false
	}
	r := &record{seq: binary.BigEndian.Uint64(b[8:]), loc: blob.Loc{Segment: binary.BigEndian.Uint32(b[16:]),
		Length: binary.BigEndian.Uint32(b[20:]), Offset: binary.BigEndian.Uint64(b[24:])}}
	if r.loc.Length == 0 || !validRange(r.loc) {
		return nil, false
	}
	r.size = cacheRecordSize(r.loc.Length)
	return r, true
}

// write writes range l (its bytes in rb.data) at the head and indexes it
// once it is on disk, unless a record holds l already.
func (c *cache) write(l blob.Loc, rb *recBuf) { c.writeNewerThan(l, rb, nil) }

// writeNewerThan is write where record old, and any record older than it,
// do not count: a promotion copies part of old (l) to the head.
func (c *cache) writeNewerThan(l blob.Loc, rb *recBuf, old *record) {
	size := cacheRecordSize(l.Length)
	c.mu.Lock()
	if cov := c.covering(l); c.slabs == nil || c.closing || cov != nil && (old == nil || cov.seq > old.seq) {
		c.mu.Unlock()
		return
	}
	c.seq++
	r := &record{loc: l, pos: c.reserve(size), size: size, seq: c.seq}
	sl := c.slabs[r.pos.slab]
	i, _ := slices.BinarySearchFunc(sl.recs, r.pos.off, func(x *record, off int64) int { return cmp.Compare(x.pos.off, off) })
	sl.recs = slices.Insert(sl.recs, i, r)
	c.writing.Add(1)
	c.mu.Unlock()
	defer c.writing.Done()

	putHeader(rb.whole, r)
	sums := rb.whole[headerSize+len(rb.data) : headerSize+len(rb.data)]
	for off := 0; off < len(rb.data); off += cacheBlock {
		sums = binary.BigEndian.AppendUint64(sums, xxh3.HashSeed(rb.data[off:min(off+cacheBlock, len(rb.data))], r.seq))
	}
	clear(rb.whole[headerSize+len(rb.data)+len(sums):])
	err := c.writeAt(sl, rb.whole[:size], r.pos.off)

	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(sl.recs, r) {
		return // overwritten already (a tiny cache)
	}
	if err != nil {
		sl.recs = slices.DeleteFunc(sl.recs, func(x *record) bool { return x == r })
		return
	}
	c.index(r)
}

// reserve returns the place of a record of size bytes at the head and
// moves the head past it, dropping the records it will overwrite. c.mu is
// held.
func (c *cache) reserve(size int64) ringPos {
	if c.head.off+size > c.slabSize {
		c.head = ringPos{(c.head.slab + 1) % len(c.slabs), 0}
	}
	p := c.head
	c.head.off += size
	sl := c.slabs[p.slab]
	sl.recs = slices.DeleteFunc(sl.recs, func(r *record) bool {
		if r.pos.off < p.off+size && p.off < r.pos.off+r.size {
			c.unindex(r)
			return true
		}
		return false
	})
	return p
}

// ahead is how many bytes the head writes before it reaches p. c.mu is
// held.
func (c *cache) ahead(p ringPos) int64 {
	d := int64(p.slab-c.head.slab)*c.slabSize + p.off - c.head.off
	if d < 0 {
		d += c.limit
	}
	return d
}

// writeAt writes b (aligned, a multiple of Align long) at off of sl,
// directly where the file system allows it.
func (c *cache) writeAt(sl *slab, b []byte, off int64) error {
	if sl.d != nil && c.direct.Load() {
		_, err := sl.d.WriteAt(b, off)
		if !errors.Is(err, unix.EINVAL) {
			return err
		}
		c.direct.Store(false) // took the flag, refuses the write: buffered from now on
	}
	_, err := sl.f.WriteAt(b, off)
	return err
}

// close waits for the writes and promotions under way and closes the
// slab files.
func (c *cache) close() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.writing.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, sl := range c.slabs {
		sl.f.Close()
		if sl.d != nil {
			sl.d.Close()
		}
	}
	c.slabs = nil
	c.entries, c.packs = map[blob.Loc]*record{}, map[uint32][]*record{}
}

// punch deallocates [off, off+n) of f, keeping its size; failures are
// ignored (the ring reuses the space anyway).
func punch(f *os.File, off, n int64) {
	unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
}
