package content

import (
	"bytes"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// batchReadCounter is a metadata store whose batches count how they read
// chunk records: by GetMany (which they have when the store's batches
// have it) or through iterators over the chunk table.
type batchReadCounter struct {
	meta.Store
	many, iters atomic.Int64
}

type countingBatch struct {
	meta.Batch
	c *batchReadCounter
}

func (c *batchReadCounter) NewBatch() meta.Batch {
	return &countingBatch{Batch: c.Store.NewBatch(), c: c}
}

func (b *countingBatch) GetMany(keys [][]byte) ([][]byte, error) {
	b.c.many.Add(1)
	return b.Batch.(meta.MultiGetter).GetMany(keys)
}

func (b *countingBatch) NewIter(lo, hi []byte) (meta.Iterator, error) {
	if isChunkKey(lo) {
		b.c.iters.Add(1)
	}
	return b.Batch.NewIter(lo, hi)
}

// keepNothing is a Retainer with no pins: it wraps every transaction's
// batch, as the namespace's always does, and changes nothing.
type keepNothing struct{}

func (keepNothing) BeforeChange(meta.Batch, []byte, func(schema.Extent, int64)) error { return nil }
func (keepNothing) Keeps(uint64) (bool, error)                                        { return false, nil }

// TestOverwriteReadsChunkRecordsInOneGo: a transaction that drops many
// chunks reads their records with the batch's GetMany (one statement on
// PostgreSQL, prefix seeks that consult bloom filters on Pebble), also
// when a retainer wraps the batch. The wrapper once hid GetMany, and each
// record then cost a seek of its own (a round trip per page on
// PostgreSQL).
func TestOverwriteReadsChunkRecordsInOneGo(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K")})
	if _, ok := v.meta.NewBatch().(meta.MultiGetter); !ok {
		t.Skip("this store's batches read one key at a time")
	}
	rnd := rand.New(rand.NewPCG(5, 5))
	const size = 64 << 12
	v.write(2, 0, testutil.RandBytes(rnd, size))
	counter := &batchReadCounter{Store: v.e.meta}
	v.e.meta = counter
	v.e.SetRetainer(keepNothing{})
	data := testutil.RandBytes(rnd, size)
	v.write(2, 0, data) // drops all 64 chunks written before
	if got := v.read(2, 0, size); !bytes.Equal(got, data) {
		t.Fatal("the overwrite reads back other data")
	}
	if n := counter.iters.Load(); n != 0 {
		t.Errorf("the overwrite's transaction read chunk records through %d iterators", n)
	}
	if counter.many.Load() == 0 {
		t.Error("the overwrite's transaction read no chunk record with GetMany")
	}
	v.e.meta = counter.Store
}
