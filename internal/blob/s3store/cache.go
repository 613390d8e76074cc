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

// cache is the local read cache: one file per chunk in STOREDIR/cache,
// named by its location, holding the chunk's bytes and their XXH3 (8
// bytes, big endian), checked on every hit. The total size of the files
// is kept at most limit by evicting the least recently used. Packs are
// immutable and their numbers never reused, so entries never go stale.
type cache struct {
	dir   string
	limit int64

	mu      sync.Mutex
	size    int64
	lru     list.List // of *entry, most recent first
	entries map[blob.Loc]*list.Element
}

type entry struct {
	loc  blob.Loc
	size int64 // of the file
}

const sumSize = 8

// openCache opens the cache in dir/cache, indexing the files there, the
// most recently modified first, and evicting beyond limit.
func openCache(dir string, limit int64) (*cache, error) {
	c := &cache{dir: filepath.Join(dir, "cache"), limit: limit, entries: map[blob.Loc]*list.Element{}}
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
		if !ok || err != nil || !info.Mode().IsRegular() || info.Size() != int64(loc.Length)+sumSize {
			os.Remove(filepath.Join(c.dir, e.Name())) // a temporary file or a stranger
			continue
		}
		files = append(files, found{loc, info.Size(), info.ModTime()})
	}
	slices.SortFunc(files, func(a, b found) int { return b.mtime.Compare(a.mtime) })
	for _, f := range files {
		c.entries[f.loc] = c.lru.PushBack(&entry{f.loc, f.size})
		c.size += f.size
	}
	c.mu.Lock()
	c.evict()
	c.mu.Unlock()
	return c, nil
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

func (c *cache) has(l blob.Loc) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[l]
	return ok
}

// get fills buf (of l.Length bytes) from the cache. A file that is
// missing, short or fails its sum is dropped and reported as a miss.
func (c *cache) get(l blob.Loc, buf []byte) bool {
	c.mu.Lock()
	el, ok := c.entries[l]
	if ok {
		c.lru.MoveToFront(el)
	}
	c.mu.Unlock()
	if !ok {
		return false
	}
	f, err := os.Open(c.path(l))
	if err == nil {
		var sum [sumSize]byte
		var n int
		if n, err = f.ReadAt(buf, 0); err == nil && n == len(buf) {
			_, err = f.ReadAt(sum[:], int64(len(buf)))
		}
		f.Close()
		if err == nil && binary.BigEndian.Uint64(sum[:]) == xxh3.Hash(buf) {
			return true
		}
	}
	c.remove(l)
	return false
}

// put adds the chunk at l (its bytes data) to the cache, evicting the
// least recently used entries beyond the limit. Failures only mean a miss
// later.
func (c *cache) put(l blob.Loc, data []byte) {
	size := int64(len(data)) + sumSize
	if size > c.limit || c.has(l) {
		return
	}
	tmp, err := os.CreateTemp(c.dir, "tmp-")
	if err != nil {
		return
	}
	_, err = tmp.Write(binary.BigEndian.AppendUint64(slices.Clip(slices.Clone(data)), xxh3.Hash(data)))
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
	c.entries[l] = c.lru.PushFront(&entry{l, size})
	c.size += size
	c.evict()
}

// evict removes the least recently used entries until the cache fits its
// limit. c.mu is held.
func (c *cache) evict() {
	for c.size > c.limit && c.lru.Len() > 0 {
		c.drop(c.lru.Back())
	}
}

func (c *cache) drop(el *list.Element) {
	e := c.lru.Remove(el).(*entry)
	delete(c.entries, e.loc)
	c.size -= e.size
	os.Remove(c.path(e.loc))
}

func (c *cache) remove(l blob.Loc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[l]; ok {
		c.drop(el)
	}
}

// dropPack removes every entry of pack num (a deleted pack).
func (c *cache) dropPack(num uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for l, el := range c.entries {
		if l.Segment == num {
			c.drop(el)
		}
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
	for l, el := range c.entries {
		if !exists(l.Segment) {
			c.drop(el)
		}
	}
}
