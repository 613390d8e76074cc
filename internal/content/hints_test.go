package content

import (
	"bytes"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// chunkReadCounter is a metadata store that counts reads of chunk records
// (point reads and iterators over the chunk table). It hides GetMany, so
// that lookups of many records go through NewIter and are counted too.
type chunkReadCounter struct {
	meta.Store
	reads atomic.Int64
}

func isChunkKey(k []byte) bool {
	lo, hi := schema.ChunkRange()
	return bytes.Compare(k, lo) >= 0 && bytes.Compare(k, hi) < 0
}

func (c *chunkReadCounter) Get(k []byte) ([]byte, error) {
	if isChunkKey(k) {
		c.reads.Add(1)
	}
	return c.Store.Get(k)
}

func (c *chunkReadCounter) NewIter(lo, hi []byte) (meta.Iterator, error) {
	if isChunkKey(lo) {
		c.reads.Add(1)
	}
	return c.Store.NewIter(lo, hi)
}

// TestHintedReadsLookUpNoRecords: the extents of a file written in whole
// uncompressed chunks carry their chunks' locations, so a verified read
// finds the bytes without reading a single chunk record; without hints
// the same reads do look records up (the counter works).
func TestHintedReadsLookUpNoRecords(t *testing.T) {
	const size = 1 << 20
	for _, hints := range []bool{true, false} {
		v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), VerifyReads: true})
		v.e.hints = hints
		data := testutil.RandBytes(rand.New(rand.NewPCG(21, 21)), size)
		v.write(2, 0, data)
		v.reopen() // no cached chunks or records
		v.e.hints = hints
		v.readyFilter()
		counter := &chunkReadCounter{Store: v.e.meta}
		v.e.meta = counter
		if got := v.read(2, 0, size); !bytes.Equal(got, data) {
			t.Fatalf("hints %v: whole read returned other data", hints)
		}
		for _, off := range []int64{0, 4096, size - 4096, 123 * 4096} {
			if got := v.read(2, off, 4096); !bytes.Equal(got, data[off:off+4096]) {
				t.Fatalf("hints %v: read of the block at %d returned other data", hints, off)
			}
		}
		v.e.loads.running.Wait()
		switch n := counter.reads.Load(); {
		case hints && n != 0:
			t.Errorf("reads of hinted extents read chunk records %d times", n)
		case !hints && n == 0:
			t.Error("reads without hints read no chunk record: the counter counts nothing")
		}
		v.e.meta = counter.Store
	}
}

// TestPartialReadsOfHintedChunksLookUpNoRecords: reads that cut chunks
// (a FUSE read's ends fall inside chunks of a CDC file) load the whole
// chunk through the hint of the extent they cut, so neither they nor the
// readahead running ahead of them read a chunk record.
func TestPartialReadsOfHintedChunksLookUpNoRecords(t *testing.T) {
	const size = 512 << 10
	v := newEnv(t, Config{Chunking: policy(t, "fixed:16K"), VerifyReads: true})
	data := testutil.RandBytes(rand.New(rand.NewPCG(25, 25)), size)
	v.write(2, 0, data)
	v.reopen() // no cached chunks or records
	v.readyFilter()
	counter := &chunkReadCounter{Store: v.e.meta}
	v.e.meta = counter
	defer func() { v.e.meta = counter.Store }()
	for off := int64(0); off < size; off += 5000 {
		n := min(3000, size-off)
		if got := v.read(2, off, int(n)); !bytes.Equal(got, data[off:off+n]) {
			t.Fatalf("read of %d bytes at %d returned other data", n, off)
		}
	}
	v.e.loads.running.Wait()
	if n := counter.reads.Load(); n != 0 {
		t.Errorf("reads cutting hinted chunks read chunk records %d times", n)
	}
}

// TestReadsPassOverStaleHints: a hint that names other bytes, punched
// bytes, a segment that does not exist or a check that does not match
// costs a wasted read, never wrong data: the read falls back to the
// chunk's record. Whole reads (runs of hinted chunks), block reads and
// partial reads all return the file's content.
func TestReadsPassOverStaleHints(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), VerifyReads: true})
	const blocks = 6
	data := testutil.RandBytes(rand.New(rand.NewPCG(22, 22)), blocks*4096)
	v.write(2, 0, data)
	// A chunk that is freed and punched: its old place reads as zeros.
	gone := testutil.RandBytes(rand.New(rand.NewPCG(23, 23)), 4096)
	v.write(4, 0, gone)
	goneRec, _, err := v.e.chunkRecord(schema.Sum(gone))
	if err != nil {
		t.Fatal(err)
	}
	v.do(func(tx *Tx) error { return tx.DropAll(4) })
	v.e.reclaimer.reclaim(true)

	recs := make([]schema.Chunk, blocks)
	for i := range recs {
		if recs[i], _, err = v.e.chunkRecord(schema.Sum(data[i*4096 : (i+1)*4096])); err != nil {
			t.Fatal(err)
		}
	}
	// A hint's check is always its own chunk's (the write computed it
	// from the bytes it hashed); its place may be wrong.
	wrong := []schema.Hint{
		{Segment: recs[1].Segment, Offset: recs[1].Offset, Check: recs[0].Check},         // another chunk's bytes
		{Segment: goneRec.Segment, Offset: goneRec.Offset, Check: recs[1].Check},         // punched
		{Segment: math.MaxUint32 - 1, Offset: 0, Check: recs[2].Check},                   // no such segment
		{Segment: recs[3].Segment, Offset: recs[3].Offset, Check: recs[3].Check ^ 1},     // a damaged check
		{Segment: recs[4].Segment, Offset: recs[4].Offset, Check: recs[4].Check},         // right
		{Segment: recs[5].Segment, Offset: recs[5].Offset + 1<<30, Check: recs[5].Check}, // past the segment's end
	}
	v.do(func(tx *Tx) error {
		for i := range blocks {
			h := schema.Sum(data[i*4096 : (i+1)*4096])
			p := Piece{Off: int64(i) * 4096, Extent: schema.Extent{Hash: h, Length: 4096, Hint: wrong[i]}}
			if err := tx.put(3, p); err != nil {
				return err
			}
			tx.delta.LogicalBytes += int64(p.Length)
		}
		return nil
	})
	for round := range 2 {
		v.reopen() // no cached chunks
		if round == 1 {
			// Sequential reads of blocks, far enough to start readahead.
			for i := range 3 * blocks {
				off := int64(i%blocks) * 4096
				if got := v.read(3, off, 4096); !bytes.Equal(got, data[off:off+4096]) {
					t.Fatalf("read of the block at %d through a stale hint returned other data", off)
				}
			}
		}
		v.checkContent(3, data)
		if got := v.read(3, 100, 8000); !bytes.Equal(got, data[100:8100]) {
			t.Fatal("partial read through stale hints returned other data")
		}
	}
	v.e.loads.running.Wait()
	v.checkInvariants()
}

// TestHintsOnlyOnWholeChunks: cutting an extent (a punch in the middle of
// a chunk) leaves the pieces that no longer map their whole chunk
// without a hint, and the file reads back right.
func TestHintsOnlyOnWholeChunks(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:16K"), VerifyReads: true})
	data := testutil.RandBytes(rand.New(rand.NewPCG(24, 24)), 64<<10)
	v.write(2, 0, data)
	for _, x := range v.allExtents() {
		if !x.Hint.Has() {
			t.Fatalf("extent at %d of a fresh write has no hint", x.off)
		}
	}
	v.do(func(tx *Tx) error { _, err := tx.Punch(2, 20<<10, 40<<10); return err })
	clear(data[20<<10 : 40<<10])
	whole := 0
	for _, x := range v.allExtents() {
		if x.ChunkOff != 0 || x.Length != 16<<10 {
			if x.Hint.Has() {
				t.Errorf("extent at %d (chunk bytes %d+%d) kept a hint", x.off, x.ChunkOff, x.Length)
			}
		} else if x.Hint.Has() {
			whole++
		}
	}
	if whole != 2 {
		t.Errorf("%d whole chunks keep their hints, want 2", whole)
	}
	v.reopen()
	v.checkContent(2, data)
}
