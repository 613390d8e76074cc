package pgstore

import (
	"bytes"
	"container/list"
	"hash/maphash"
	"slices"
	"sort"
	"sync"
)

// recordCache keeps records of the latest committed state that this Store
// read or wrote, so that a point read (Get, GetMany, a batch's Get of a
// key it did not write) of a record read or written recently costs no
// round trip: the namespace reads the same inode and entry records many
// times per operation (docs/SHARED.md, section 5). Absent keys are kept
// too (a lookup of a missing name). Iterators and snapshots read the
// server, as before.
//
// It is exact while this Store is the only writer of its schema, which
// the volume's lock makes so on one host: every commit applies its writes
// to the cache once PostgreSQL has committed them (write-through), and a
// read that raced a commit does not fill the cache: each key falls in a
// stripe whose generation a commit writing into it bumps, and a fill
// whose stripe (or the whole cache, for range deletes) changed since its
// read began is dropped. Commits that overlap in time and in keys drop
// those keys instead (begin). A commit whose outcome is unknown (the
// connection was lost after it was sent) empties the cache. Other writers
// (hosts mounting the volume at once, issue 16) must invalidate it (drop,
// or an emptying), or it must be off (Options.CacheBytes < 0); an
// invalidation also keeps the commits under way from writing the keys
// it names through (another host may have written them after them).
type recordCache struct {
	limit int64
	seed  maphash.Seed

	mu      sync.Mutex
	size    int64
	lru     list.List // of *cached, most recent first
	entries map[string]*list.Element
	stripe  [cacheStripes]uint64 // generations, bumped by commits writing keys in them
	all     uint64               // generation of the whole cache, bumped by range deletes

	flying       map[string]*inFlight // keys commits under way write
	rangeCommits int                  // commits under way that delete ranges
}

const cacheStripes = 256

// cached is one key's value (nil: the key does not exist).
type cached struct {
	key   string
	value []byte
}

// entryOverhead is what an entry costs beyond its key and value.
const entryOverhead = 96

// ticket is what a read remembers to fill the cache afterwards.
type ticket struct{ stripe, all uint64 }

func newRecordCache(limit int64) *recordCache {
	return &recordCache{limit: limit, seed: maphash.MakeSeed(), entries: map[string]*list.Element{},
		flying: map[string]*inFlight{}}
}

func (c *recordCache) stripeOf(key []byte) int {
	return int(maphash.Bytes(c.seed, key) % cacheStripes)
}

// get returns a copy of key's value and whether the cache knows it
// (value nil: the key does not exist).
func (c *recordCache) get(key []byte) (value []byte, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[string(key)]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(el)
	e := el.Value.(*cached)
	if e.value == nil {
		return nil, true
	}
	return bytes.Clone(e.value), true
}

// ticket is taken before a read of key from the server.
func (c *recordCache) ticket(key []byte) ticket {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ticket{c.stripe[c.stripeOf(key)], c.all}
}

// fill records what a read that took t found for key (value nil: absent),
// unless a commit wrote into key's stripe since t.
func (c *recordCache) fill(key, value []byte, t ticket) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t != (ticket{c.stripe[c.stripeOf(key)], c.all}) {
		return
	}
	c.setLocked(string(key), value)
}

// setLocked makes value (nil: absent) the cached value of key. c.mu is
// held.
func (c *recordCache) setLocked(key string, value []byte) {
	if value != nil {
		value = bytes.Clone(value)
		if value == nil {
			value = []byte{}
		}
	}
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*cached)
		c.size += int64(len(value) - len(e.value))
		e.value = value
		c.lru.MoveToFront(el)
	} else {
		c.entries[key] = c.lru.PushFront(&cached{key, value})
		c.size += int64(len(key)+len(value)) + entryOverhead
	}
	for c.size > c.limit && c.lru.Len() > 0 {
		c.dropLocked(c.lru.Back())
	}
}

func (c *recordCache) dropLocked(el *list.Element) {
	e := c.lru.Remove(el).(*cached)
	delete(c.entries, e.key)
	c.size -= int64(len(e.key)+len(e.value)) + entryOverhead
}

// commitWrites is what a commit changes: ranges deleted, keys deleted,
// keys set to vals.
type commitWrites struct {
	ranges     []span
	dels, keys [][]byte
	vals       [][]byte
}

// inFlight is a key that commits under way write.
type inFlight struct {
	commits   int
	contended bool // two commits writing it overlapped in time
}

// begin registers a commit's writes before it is sent. Two commits in
// flight at once that write the same key (or one of which deletes a
// range) commit in an order the cache cannot see: PostgreSQL's, which
// need not be the order in which they return. Such keys are marked
// contended, and end drops them instead of writing them through.
func (c *recordCache) begin(w commitWrites) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(w.ranges) > 0 {
		c.rangeCommits++
		for _, f := range c.flying {
			f.contended = true
		}
	}
	for _, list := range [][][]byte{w.dels, w.keys} {
		for _, k := range list {
			f := c.flying[string(k)]
			if f == nil {
				f = &inFlight{}
				c.flying[string(k)] = f
			}
			f.commits++
			f.contended = f.contended || f.commits > 1 || c.rangeCommits > 0
		}
	}
}

// end applies a commit's writes once it returned: what it wrote, unless
// contended, otherwise the keys are dropped; a failed commit (which may
// have committed, if its connection was lost after it was sent) empties
// the cache.
func (c *recordCache) end(w commitWrites, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(w.ranges) > 0 {
		c.rangeCommits--
		c.dropRangesLocked(w.ranges)
	}
	apply := func(k []byte, v []byte) {
		f := c.flying[string(k)]
		if f.contended || err != nil {
			c.forgetLocked(k)
		} else {
			c.stripe[c.stripeOf(k)]++
			c.setLocked(string(k), v)
		}
		if f.commits--; f.commits == 0 {
			delete(c.flying, string(k))
		}
	}
	for _, k := range w.dels {
		apply(k, nil)
	}
	for i, k := range w.keys {
		apply(k, w.vals[i])
	}
	if err != nil {
		c.resetLocked()
	}
}

// resetLocked empties the cache. c.mu is held.
func (c *recordCache) resetLocked() {
	c.all++
	c.contendAllLocked()
	c.entries = map[string]*list.Element{}
	c.lru.Init()
	c.size = 0
}

// forget drops key (written by a statement that is not a commit).
func (c *recordCache) forget(key []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetLocked(key)
}

// forgetLocked drops key; a read of it under way does not fill it
// afterwards. c.mu is held.
func (c *recordCache) forgetLocked(key []byte) {
	c.stripe[c.stripeOf(key)]++
	if el, ok := c.entries[string(key)]; ok {
		c.dropLocked(el)
	}
}

// dropRangesLocked drops the keys in ranges; no read under way fills the
// cache afterwards. c.mu is held.
func (c *recordCache) dropRangesLocked(ranges []span) {
	c.all++
	if len(ranges) == 0 {
		return
	}
	// One binary search per cached key instead of a pass over the ranges:
	// a commit that frees many packs' dead-span records deletes a range
	// per pack, and each entry against each range cost an unmount 0.9 s of
	// CPU after a 4 GiB file was deleted.
	merged := mergeSpans(ranges)
	for k, el := range c.entries {
		// merged[i-1] is the last range starting at or before k.
		i := sort.Search(len(merged), func(i int) bool { return string(merged[i].lo) > k })
		if i > 0 && merged[i-1].holds(k) {
			c.dropLocked(el)
		}
	}
}

// mergeSpans returns ranges sorted by start with overlapping and adjacent
// ones joined, so that a key is in one of them exactly when it is in the
// last one that starts at or before it.
func mergeSpans(ranges []span) []span {
	sorted := slices.SortedFunc(slices.Values(ranges), func(a, b span) int { return bytes.Compare(a.lo, b.lo) })
	out := sorted[:1]
	for _, r := range sorted[1:] {
		last := &out[len(out)-1]
		switch {
		case last.hi != nil && bytes.Compare(r.lo, last.hi) > 0:
			out = append(out, r)
		case last.hi != nil && (r.hi == nil || bytes.Compare(r.hi, last.hi) > 0):
			last.hi = r.hi
		}
	}
	return out
}

// contendAllLocked makes every commit under way drop its keys at its end
// instead of writing them through. c.mu is held.
func (c *recordCache) contendAllLocked() {
	for _, f := range c.flying {
		f.contended = true
	}
}

// drop drops keys and the keys in ranges ([lo, hi), hi nil: no bound):
// other hosts changed them. Reads under way do not fill them afterwards,
// and commits of this host under way that write them do not write them
// through: the lock is free once a COMMIT ran on the server, before the
// commit's writes reach the cache (end), so another host may have
// written them since, and its value is the one the server keeps.
func (c *recordCache) drop(keys [][]byte, ranges [][2][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		c.forgetLocked(k)
		if f := c.flying[string(k)]; f != nil {
			f.contended = true
		}
	}
	if len(ranges) > 0 {
		c.contendAllLocked()
		spans := make([]span, len(ranges))
		for i, r := range ranges {
			spans[i] = span{r[0], r[1]}
		}
		c.dropRangesLocked(spans)
	}
}
