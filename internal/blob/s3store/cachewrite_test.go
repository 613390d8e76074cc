package s3store

import (
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/blob"
)

// Records read back the same whether written directly (O_DIRECT) or
// through the page cache, from a prefetch's recordBuf or from any other
// buffer, for every size (including ones that leave a record's last block
// partial), also after the cache is reopened; a put never changes the
// bytes it was given.
func TestCachePutWriteModes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	sizes := []int{1, 100, 4096, 4095, 65536, 65537, 300000, 1 << 20}
	for _, direct := range []bool{true, false} {
		dir := t.TempDir()
		c, err := openCache(dir, 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		c.direct.Store(direct)
		want := map[blob.Loc][]byte{}
		for i, n := range sizes {
			for _, fromRecord := range []bool{true, false} {
				l := blob.Loc{Segment: uint32(i + 1), Offset: 4096 * uint64(boolInt(fromRecord)), Length: uint32(n)}
				var rb *recBuf
				data := make([]byte, n)
				if fromRecord {
					rb = recordBuf(n)
					data = rb.data
				}
				for j := range data {
					data[j] = byte(r.Uint32())
				}
				want[l] = append([]byte(nil), data...)
				if fromRecord {
					c.putRecord(l, rb)
				} else {
					c.put(l, data)
					if string(data) != string(want[l]) {
						t.Fatalf("direct=%v n=%d: put changed its data", direct, n)
					}
				}
			}
		}
		check := func(c *cache, when string) {
			for l, w := range want {
				got := make([]byte, l.Length)
				if !c.get(l, got) || string(got) != string(w) {
					t.Fatalf("direct=%v %s: range %+v reads back wrong", direct, when, l)
				}
			}
		}
		check(c, "")
		c.close()
		if c, err = openCache(dir, 64<<20); err != nil {
			t.Fatal(err)
		}
		check(c, "after reopen")
		c.close()
	}
}

// The ring wraps: with many more bytes put than it holds, the index
// holds only records that read back right, never more bytes than the
// limit, and a reopen finds the newest records.
func TestCacheRingWraps(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	dir := t.TempDir()
	const limit = 1 << 20
	c, err := openCache(dir, limit)
	if err != nil {
		t.Fatal(err)
	}
	want := map[blob.Loc][]byte{}
	var last blob.Loc
	for i := range 200 {
		n := 1 + r.IntN(100<<10)
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		last = blob.Loc{Segment: uint32(i + 1), Length: uint32(n)}
		want[last] = data
		c.put(last, data)
		if c.bytes() > limit {
			t.Fatalf("after %d puts the index holds %d bytes", i+1, c.bytes())
		}
	}
	if !c.has(last) {
		t.Fatal("the newest record is not found")
	}
	// check reads every range put (a hit near the head's reach promotes
	// it) and returns how many were found.
	check := func(c *cache) int {
		found := 0
		for l, w := range want {
			got := make([]byte, l.Length)
			if c.get(l, got) {
				found++
				if string(got) != string(w) {
					t.Fatalf("range %+v reads back wrong", l)
				}
			}
		}
		c.writing.Wait()
		return found
	}
	if n := check(c); n == 0 || n == len(want) {
		t.Fatalf("%d of %d ranges cached", n, len(want))
	}
	before := c.indexed()
	c.close()
	if c, err = openCache(dir, limit); err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if after := c.indexed(); !maps.Equal(after, before) {
		t.Fatalf("reopened, the cache indexes %d ranges; %d before", len(after), len(before))
	}
	check(c)
	if dirBytes(t, c.dir) > limit {
		t.Fatalf("%d bytes of files, limit %d", dirBytes(t, c.dir), limit)
	}
}

// indexed returns the ranges the index holds, with the sequence numbers
// of their records.
func (c *cache) indexed() map[blob.Loc]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[blob.Loc]uint64{}
	for l, r := range c.entries {
		m[l] = r.seq
	}
	return m
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Dropping a deleted pack's records punches their bytes out of the slab
// files: the cache's disk space goes down with the pack.
func TestCacheDropPackPunches(t *testing.T) {
	dir := t.TempDir()
	c, err := openCache(dir, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for i := range 4 {
		c.put(blob.Loc{Segment: 7, Offset: uint64(i) << 20, Length: 1 << 20}, data)
	}
	before := dirBytesAllocated(t, c.dir)
	c.dropPack(7)
	after := dirBytesAllocated(t, c.dir)
	if before < 4<<20 || after > before-(4<<20)+64<<10 {
		t.Fatalf("slab files hold %d bytes before dropping the pack, %d after", before, after)
	}
	if c.has(blob.Loc{Segment: 7, Length: 1}) {
		t.Fatal("a dropped pack's range is still cached")
	}
}

func dirBytesAllocated(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(dir, e.Name()), &st); err != nil {
			t.Fatal(err)
		}
		n += st.Blocks * 512
	}
	return n
}
