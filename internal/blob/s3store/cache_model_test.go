package s3store

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/testutil"
)

// A randomized model of the read cache: records of random ranges of a few
// packs (the model holds each pack's bytes), reads of ranges within them
// from two goroutines at once (so promotions run beside puts and other
// reads), and reopens while the other goroutine reads. The cache may miss
// anything; a hit must return the pack's bytes, and neither its index nor
// its files may exceed its bound.
func TestCacheModel(t *testing.T) {
	r := testutil.Rand(t)
	const packs, packSize = 4, 2 << 20
	content := make([][]byte, packs)
	for i := range content {
		content[i] = testutil.RandBytes(r, packSize)
	}
	dir := t.TempDir()
	limit := int64(1+r.IntN(3)) << 20
	c, err := openCache(dir, limit)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.close() }()

	var mu sync.Mutex // guards put and c (reopens replace it)
	var put []blob.Loc
	// Ranges start at Align boundaries half the time (packs with
	// padding), anywhere else (packs without).
	randRange := func(maxLen int) blob.Loc {
		off := r.IntN(packSize/blob.Align) * blob.Align
		if r.IntN(2) == 0 {
			off = r.IntN(packSize - 1)
		}
		n := 1 + r.IntN(min(maxLen, packSize-off))
		return blob.Loc{Segment: uint32(1 + r.IntN(packs)), Offset: uint64(off), Length: uint32(n)}
	}
	hits := 0
	read := func(c *cache, l blob.Loc) {
		buf := make([]byte, l.Length)
		if c.get(l, buf) {
			hits++
			if want := content[l.Segment-1][l.Offset:][:l.Length]; !bytes.Equal(buf, want) {
				t.Errorf("%+v: a hit returned wrong bytes", l)
			}
		}
	}
	// within returns a chunk-like range inside l: from an Align boundary
	// of it or from anywhere, of any length to its end.
	within := func(l blob.Loc) blob.Loc {
		off := uint64(r.IntN(int(l.Length)/blob.Align+1)) * blob.Align
		if r.IntN(2) == 0 {
			off = uint64(r.IntN(int(l.Length)))
		}
		if off >= uint64(l.Length) {
			off = 0
		}
		n := 1 + r.IntN(int(uint64(l.Length)-off))
		return blob.Loc{Segment: l.Segment, Offset: l.Offset + off, Length: uint32(n)}
	}

	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	r2 := rand.New(rand.NewPCG(r.Uint64(), 2)) // the second reader's
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			mu.Lock()
			cc := c
			var l blob.Loc
			if len(put) > 0 {
				p := put[r2.IntN(len(put))]
				l = blob.Loc{Segment: p.Segment, Offset: p.Offset, Length: uint32(1 + r2.IntN(int(p.Length)))}
			}
			mu.Unlock()
			if l.Length > 0 {
				buf := make([]byte, l.Length)
				if cc.get(l, buf) && !bytes.Equal(buf, content[l.Segment-1][l.Offset:][:l.Length]) {
					t.Errorf("%+v: a hit in the second reader returned wrong bytes", l)
				}
			}
		}
	}()

	for op := range 4000 {
		mu.Lock()
		switch k := r.IntN(20); {
		case k < 6: // a record: a chunk, or now and then a prefetch's span
			l := randRange(64 << 10)
			if r.IntN(8) == 0 {
				l = randRange(1 << 20)
			}
			rb := recordBuf(int(l.Length))
			copy(rb.data, content[l.Segment-1][l.Offset:][:l.Length])
			c.putRecord(l, rb)
			put = append(put, l)
		case k < 18 && len(put) > 0: // a read of a chunk a record holds
			read(c, within(put[r.IntN(len(put))]))
		case k < 19: // a read anywhere
			read(c, randRange(64<<10))
		default: // a reopen (the second reader may still use the old one)
			c.close()
			if c, err = openCache(dir, limit); err != nil {
				mu.Unlock()
				t.Fatal(err)
			}
		}
		if n := c.bytes(); n > limit {
			mu.Unlock()
			t.Fatalf("op %d: the index holds %d bytes, bound %d", op, n, limit)
		}
		mu.Unlock()
		if t.Failed() {
			break
		}
	}
	close(done)
	wg.Wait()
	c.writing.Wait()
	if n := dirBytes(t, c.dir); n > limit {
		t.Fatalf("the slab files hold %d bytes, bound %d", n, limit)
	}
	if hits == 0 {
		t.Fatal("no read hit: the model tests nothing")
	}
	t.Logf("%d puts, %d hits of the first reader", len(put), hits)
}
