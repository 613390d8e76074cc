package s3store

import (
	"container/list"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/doppelfs/doppel/internal/blob"
)

// cache is the local read cache: one file per cached range of a pack in
// STOREDIR/cache (a chunk a read fetched, or a prefetch's span of several
// chunks), named by the range's location, holding its bytes followed by
// an XXH3 (8 bytes, big endian) of each cacheBlock of them, so that a hit
// checks only the blocks it reads. A range of one block has the layout of
// the earlier one-chunk files (bytes, then one XXH3), which therefore stay
// valid. The total size of the files is kept at most limit by evicting
// the least recently used range. Packs are immutable and their numbers
// never reused, so entries never go stale.
type cache struct {
	dir   string
	limit int64

	mu      sync.Mutex
	size    int64
	lru     list.List // of *entry, most recent first
	entries map[blob.Loc]*list.Element
	packs   map[uint32][]*list.Element // the entries of each pack
}

type entry struct {
	loc  blob.Loc // the cached range
	size int64    // of the file
}

const sumSize = 8

// cacheBlock is the span of one checksum in a cache file: a hit reads and
// checks the blocks its chunk overlaps, not the whole range.
const cacheBlock = 64 << 10

// cacheFileSize is the size of the file caching a range of n bytes.
func cacheFileSize(n uint32) int64 {
	return int64(n) + sumSize*int64((uint64(n)+cacheBlock-1)/cacheBlock)
}

// openCache opens the cache in dir/cache, indexing the files there, the
// most recently modified first, and evicting beyond limit.
func openCache(dir string, limit int64) (*cache, error) {
	c := &cache{dir: filepath.Join(dir, "cache"), limit: limit, entries: map[blob.Loc]*list.Element{},
		packs: map[uint32][]*list.Element{}}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, fmt.Errorf("s3: cache: %w", err)
	}
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		return nil, fmt.Errorf("s3: cache: %w", err)
	}
	type found struct {
		loc   blob.Loc
		size  int64
		mtime time.Time
	}
	var files []found
	for _, e := range ents {
		loc, ok := parseCacheName(e.Name())
		info, err := e.Info()
		if !ok || err != nil || !info.Mode().IsRegular() || loc.Length == 0 || info.Size() != cacheFileSize(loc.Length) {
			os.Remove(filepath.Join(c.dir, e.Name())) // a temporary file or a stranger
			continue
		}
		files = append(files, found{loc, info.Size(), info.ModTime()})
	}
	slices.SortFunc(files, func(a, b found) int { return b.mtime.Compare(a.mtime) })
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range files {
		c.index(c.lru.PushBack(&entry{f.loc, f.size}))
	}
	c.evict()
	return c, nil
}

// index records the entry of el in the maps. c.mu is held.
func (c *cache) index(el *list.Element) {
	e := el.Value.(*entry)
	c.entries[e.loc] = el
	c.packs[e.loc.Segment] = append(c.packs[e.loc.Segment], el)
	c.size += e.size
}

func cacheName(l blob.Loc) string {
	return fmt.Sprintf("%08x-%012x-%08x", l.Segment, l.Offset, l.Length)
}

func parseCacheName(name string) (blob.Loc, bool) {
	var l blob.Loc
	if len(name) != 30 || strings.Count(name, "-") != 2 {
		return l, false
	}
	if _, err := fmt.Sscanf(name, "%08x-%012x-%08x", &l.Segment, &l.Offset, &l.Length); err != nil {
		return l, false
	}
	return l, cacheName(l) == name && checkLoc(l) == nil
}

func (c *cache) path(l blob.Loc) string { return filepath.Join(c.dir, cacheName(l)) }

// covering returns the entry whose range holds all of l. c.mu is held.
func (c *cache) covering(l blob.Loc) *list.Element {
	for _, el := range c.packs[l.Segment] {
		r := el.Value.(*entry).loc
		if r.Offset <= l.Offset && l.Offset+uint64(l.Length) <= r.Offset+uint64(r.Length) {
			return el
		}
	}
	return nil
}

func (c *cache) has(l blob.Loc) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.covering(l) != nil
}

// get fills buf (of l.Length bytes) from the range cached that holds l,
// checking the blocks of it that l overlaps. A file that is missing,
// short or fails a sum is dropped and reported as a miss.
func (c *cache) get(l blob.Loc, buf []byte) bool {
	c.mu.Lock()
	el := c.covering(l)
	var r blob.Loc
	if el != nil {
		c.lru.MoveToFront(el)
		r = el.Value.(*entry).loc
	}
	c.mu.Unlock()
	if el == nil {
		return false
	}
	if c.read(r, l, buf) {
		return true
	}
	c.remove(r)
	return false
}

// read fills buf with the bytes of l from the file of range r, checking
// every block of r that l overlaps.
func (c *cache) read(r, l blob.Loc, buf []byte) bool {
	f, err := os.Open(c.path(r))
	if err != nil {
		return false
	}
	defer f.Close()
	rel := l.Offset - r.Offset
	first, last := rel/cacheBlock, (rel+uint64(l.Length)-1)/cacheBlock
	from, to := first*cacheBlock, min((last+1)*cacheBlock, uint64(r.Length))
	span := make([]byte, to-from)
	sums := make([]byte, sumSize*(last-first+1))
	if n, err := f.ReadAt(span, int64(from)); err != nil || n != len(span) {
		return false
	}
	if n, err := f.ReadAt(sums, int64(r.Length)+sumSize*int64(first)); err != nil || n != len(sums) {
		return false
	}
	for i := range last - first + 1 {
		block := span[i*cacheBlock : min((i+1)*cacheBlock, uint64(len(span)))]
		if binary.BigEndian.Uint64(sums[i*sumSize:]) != xxh3.Hash(block) {
			return false
		}
	}
	copy(buf, span[rel-from:])
	return true
}

// put adds range l of a pack (its bytes data) to the cache, evicting the
// least recently used entries beyond the limit. A range already covered
// is not written again. Failures only mean a miss later.
func (c *cache) put(l blob.Loc, data []byte) {
	size := cacheFileSize(l.Length)
	if size > c.limit || len(data) == 0 || c.has(l) {
		return
	}
	file := make([]byte, 0, size)
	file = append(file, data...)
	for off := 0; off < len(data); off += cacheBlock {
		file = binary.BigEndian.AppendUint64(file, xxh3.Hash(data[off:min(off+cacheBlock, len(data))]))
	}
	tmp, err := os.CreateTemp(c.dir, "tmp-")
	if err != nil {
		return
	}
	_, err = tmp.Write(file)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), c.path(l))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[l]; ok { // put twice at once
		c.lru.MoveToFront(el)
		return
	}
	c.index(c.lru.PushFront(&entry{l, size}))
	c.evict()
}

// evict removes the least recently used entries until the cache fits its
// limit. c.mu is held.
func (c *cache) evict() {
	for c.size > c.limit && c.lru.Len() > 0 {
		c.drop(c.lru.Back())
	}
}

// drop removes the entry of el and its file. c.mu is held.
func (c *cache) drop(el *list.Element) {
	e := c.lru.Remove(el).(*entry)
	delete(c.entries, e.loc)
	c.packs[e.loc.Segment] = slices.DeleteFunc(c.packs[e.loc.Segment], func(x *list.Element) bool { return x == el })
	if len(c.packs[e.loc.Segment]) == 0 {
		delete(c.packs, e.loc.Segment)
	}
	c.size -= e.size
	os.Remove(c.path(e.loc))
}

// remove drops the entry of range r.
func (c *cache) remove(r blob.Loc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[r]; ok {
		c.drop(el)
	}
}

// dropPack removes every entry of pack num (a deleted pack).
func (c *cache) dropPack(num uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, el := range slices.Clone(c.packs[num]) {
		c.drop(el)
	}
}

// bytes is the total size of the cache's files.
func (c *cache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// keepPacks drops the entries of packs for which exists is false (packs
// deleted while the store was closed).
func (c *cache) keepPacks(exists func(uint32) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for num, els := range c.packs {
		if !exists(num) {
			for _, el := range slices.Clone(els) {
				c.drop(el)
			}
		}
	}
}
