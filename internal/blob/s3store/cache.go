package s3store

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/zeebo/xxh3"

	"github.com/doppelfs/doppel/internal/blob"
)

// cache is the local read cache: ranges of packs (a chunk a read fetched,
// or a prefetch's span of several chunks) kept as records in a ring of
// slab files in STOREDIR/cache (cache_ring.go has the layout). A record
// holds the range's bytes and an XXH3 of each cacheBlock of them, so that
// a hit checks only the blocks it reads; a record that fails a check is a
// miss and leaves the index.
//
// New records are written at the ring's head; the head overwrites the
// oldest records, which leave the index first (FIFO). A hit on a record
// the head will reach within the next half of the ring copies it to the
// head, so that what is read again stays (a cheap stand-in for LRU). Packs
// are immutable and their numbers never reused, so records never go stale.
//
// Why a ring and not a file per range, as before: creating a file cost
// about 1 ms of CPU on the project's ext4 (inode allocation), as much as
// writing the megabytes in it, and a streaming read creates hundreds per
// GiB; the ring's files are created once, and written directly (O_DIRECT)
// where the file system allows it, so that filling the cache costs no
// page-cache copy either.
type cache struct {
	dir      string
	limit    int64 // the ring's bytes: slabs * slabSize
	slabSize int64
	direct   atomic.Bool // write with O_DIRECT (until the file system refuses)
	// writing counts the writes and promotions under way; they are added
	// under mu while closing is false, so none is added while close waits
	// (a WaitGroup's Add from zero must not race its Wait).
	writing sync.WaitGroup

	mu      sync.Mutex
	closing bool // close has begun: nothing new is written
	slabs   []*slab
	head    ringPos // where the next record goes
	seq     uint64  // of the newest record
	size    int64   // of the records in the index
	entries map[blob.Loc]*record
	packs   map[uint32][]*record // the records of each pack
}

// record is a range in the ring.
type record struct {
	loc       blob.Loc // the cached range
	pos       ringPos
	size      int64 // on disk, a multiple of Align
	seq       uint64
	indexed   bool // findable by reads; false once evicted or dropped
	promoting bool // being copied to the head
}

const sumSize = 8

// cacheBlock is the span of one checksum in a record: a hit reads and
// checks the blocks its chunk overlaps, not the whole range.
const cacheBlock = 64 << 10

// openCache opens the cache of at most limit bytes in dir/cache, indexing
// the records its slab files hold and removing any other file.
func openCache(dir string, limit int64) (*cache, error) {
	c := &cache{dir: filepath.Join(dir, "cache"), entries: map[blob.Loc]*record{}, packs: map[uint32][]*record{}}
	c.direct.Store(true)
	n, size := ringShape(limit)
	c.slabSize, c.limit = size, int64(n)*size
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, fmt.Errorf("s3: cache: %w", err)
	}
	if err := c.openSlabs(n); err != nil {
		c.close()
		return nil, fmt.Errorf("s3: cache: %w", err)
	}
	return c, nil
}

// index makes r findable. c.mu is held.
func (c *cache) index(r *record) {
	if old, ok := c.entries[r.loc]; ok {
		c.unindex(old)
	}
	r.indexed = true
	c.entries[r.loc] = r
	c.packs[r.loc.Segment] = append(c.packs[r.loc.Segment], r)
	c.size += r.size
}

// unindex makes r unfindable; its space is reused when the head passes.
// c.mu is held.
func (c *cache) unindex(r *record) {
	if !r.indexed {
		return
	}
	r.indexed = false
	if c.entries[r.loc] == r {
		delete(c.entries, r.loc)
	}
	c.packs[r.loc.Segment] = slices.DeleteFunc(c.packs[r.loc.Segment], func(x *record) bool { return x == r })
	if len(c.packs[r.loc.Segment]) == 0 {
		delete(c.packs, r.loc.Segment)
	}
	c.size -= r.size
}

// covering returns the newest record whose range holds all of l (a range
// promoted out of an older record is in both). c.mu is held.
func (c *cache) covering(l blob.Loc) *record {
	var newest *record
	for _, r := range c.packs[l.Segment] {
		if r.loc.Offset <= l.Offset && l.Offset+uint64(l.Length) <= r.loc.Offset+uint64(r.loc.Length) &&
			(newest == nil || r.seq > newest.seq) {
			newest = r
		}
	}
	return newest
}

func (c *cache) has(l blob.Loc) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.covering(l) != nil
}

// get fills buf (of l.Length bytes) from the record that holds l,
// checking the blocks of it that l overlaps. A record that fails a check
// (or was overwritten meanwhile) leaves the index, and the read is a miss.
//
// A hit on a record the head will reach within the next half of the ring
// promotes the blocks it read: they are written again at the head, as a
// record of their own, from the bytes just read. Only those blocks: a
// prefetch's record may hold megabytes, and copying all of it for every
// 4 KiB read of a random reader took half the daemon's CPU.
func (c *cache) get(l blob.Loc, buf []byte) bool {
	c.mu.Lock()
	r := c.covering(l)
	var promote bool
	var sl *slab
	if r != nil && c.slabs != nil {
		sl = c.slabs[r.pos.slab]
		promote = !r.promoting && !c.closing && c.ahead(r.pos) < c.limit/2
		r.promoting = r.promoting || promote
	}
	if promote {
		c.writing.Add(1) // under mu, before close's Wait (closing)
	}
	c.mu.Unlock()
	if sl == nil {
		return false
	}
	rel := l.Offset - r.loc.Offset
	from, to := rel/cacheBlock*cacheBlock, min((rel+uint64(l.Length)+cacheBlock-1)/cacheBlock*cacheBlock, uint64(r.loc.Length))
	var rb *recBuf
	var span []byte
	if promote {
		rb = recordBuf(int(to - from))
		span = rb.data
	} else {
		span = make([]byte, to-from)
	}
	if !c.readSpan(sl, r, from, span) {
		c.mu.Lock()
		r.promoting = r.promoting && !promote
		c.unindex(r)
		c.mu.Unlock()
		if promote {
			c.writing.Done()
		}
		return false
	}
	copy(buf, span[rel-from:])
	if promote {
		go func() {
			defer c.writing.Done()
			c.mu.Lock()
			r.promoting = false
			c.mu.Unlock()
			c.writeNewerThan(blob.Loc{Segment: r.loc.Segment, Offset: r.loc.Offset + from, Length: uint32(to - from)}, rb, r)
		}()
	}
	return true
}

// readSpan fills span with the bytes of record r (in slab sl) from rel
// on, which starts at a cacheBlock boundary and ends at one or at the
// record's end, and checks them against the record's sums (seeded with
// its seq: another record's bytes do not pass, cache_ring.go).
func (c *cache) readSpan(sl *slab, r *record, rel uint64, span []byte) bool {
	first := rel / cacheBlock
	blocks := (uint64(len(span)) + cacheBlock - 1) / cacheBlock
	sums := make([]byte, sumSize*blocks)
	base := r.pos.off + headerSize
	if n, err := sl.f.ReadAt(span, base+int64(rel)); err != nil || n != len(span) {
		return false
	}
	if n, err := sl.f.ReadAt(sums, base+int64(r.loc.Length)+sumSize*int64(first)); err != nil || n != len(sums) {
		return false
	}
	for i := range blocks {
		block := span[i*cacheBlock : min((i+1)*cacheBlock, uint64(len(span)))]
		if binary.BigEndian.Uint64(sums[i*sumSize:]) != xxh3.HashSeed(block, r.seq) {
			return false
		}
	}
	return true
}

// put adds range l of a pack (its bytes data, which it does not change)
// to the cache. A range already covered is not written again. Failures
// only mean a miss later.
func (c *cache) put(l blob.Loc, data []byte) {
	if c.wants(l, len(data)) {
		rb := recordBuf(len(data))
		copy(rb.data, data)
		c.write(l, rb)
	}
}

// putRecord is put of a range whose bytes are rb.data: the record is
// written from rb without a copy (prefetches read into a recordBuf).
func (c *cache) putRecord(l blob.Loc, rb *recBuf) {
	if c.wants(l, len(rb.data)) {
		c.write(l, rb)
	}
}

// wants reports whether range l of n bytes should be written.
func (c *cache) wants(l blob.Loc, n int) bool {
	return n > 0 && n == int(l.Length) && cacheRecordSize(l.Length) <= c.slabSize && !c.has(l)
}

// bytes is the total size of the records in the index.
func (c *cache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// remove drops the record of range r.
func (c *cache) remove(l blob.Loc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.entries[l]; ok {
		c.unindex(r)
	}
}

// dropPack drops every record of pack num (a deleted pack) and punches
// its bytes out of the slab files, so that deleted data gives its local
// disk space back too (where the file system cannot punch, the space is
// reused when the head comes round).
func (c *cache) dropPack(num uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range slices.Clone(c.packs[num]) {
		c.unindex(r)
		if c.slabs != nil {
			punch(c.slabs[r.pos.slab].f, r.pos.off, r.size)
		}
	}
}

// keepPacks drops the records of packs for which exists is false (packs
// deleted while the store was closed).
func (c *cache) keepPacks(exists func(uint32) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for num, rs := range c.packs {
		if !exists(num) {
			for _, r := range slices.Clone(rs) {
				c.unindex(r)
			}
		}
	}
}
