package content

import (
	"bytes"
	"cmp"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// lazyBlobs is a blob store whose puts become durable later, each after a
// random delay, as the S3 store's packs do once uploaded: SyncLocs waits
// for the given locations only, Sync for every put so far.
type lazyBlobs struct {
	blob.Store
	mu      sync.Mutex
	changed *sync.Cond
	pending map[blob.Loc]bool // put, not durable yet
	rng     *rand.Rand        // guarded by mu
}

func newLazyBlobs(s blob.Store, seed uint64) *lazyBlobs {
	l := &lazyBlobs{Store: s, pending: map[blob.Loc]bool{}, rng: rand.New(rand.NewPCG(seed, 3))}
	l.changed = sync.NewCond(&l.mu)
	return l
}

func (l *lazyBlobs) uploadLater(locs []blob.Loc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, loc := range locs {
		l.pending[loc] = true
		delay := time.Duration(l.rng.IntN(3000)) * time.Microsecond
		time.AfterFunc(delay, func() {
			l.mu.Lock()
			delete(l.pending, loc)
			l.changed.Broadcast()
			l.mu.Unlock()
		})
	}
}

func (l *lazyBlobs) Put(data []byte) (blob.Loc, error) {
	loc, err := l.Store.Put(data)
	if err == nil {
		l.uploadLater([]blob.Loc{loc})
	}
	return loc, err
}

func (l *lazyBlobs) PutMany(data [][]byte) ([]blob.Loc, error) {
	locs, err := l.Store.PutMany(data)
	if err == nil {
		l.uploadLater(locs)
	}
	return locs, err
}

func (l *lazyBlobs) StartPutMany(data [][]byte) (*blob.Writing, error) {
	locs, err := l.PutMany(data)
	if err != nil {
		return nil, err
	}
	return &blob.Writing{Locs: locs}, nil
}

func (l *lazyBlobs) SyncLocs(locs []blob.Loc) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, loc := range locs {
		for l.pending[loc] {
			l.changed.Wait()
		}
	}
	return nil
}

func (l *lazyBlobs) Sync() error {
	l.mu.Lock()
	for len(l.pending) > 0 {
		l.changed.Wait()
	}
	l.mu.Unlock()
	return l.Store.Sync()
}

func (l *lazyBlobs) durable(loc blob.Loc) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.pending[loc]
}

// orderedMeta is a metadata store whose commits are durable at once (as
// PostgreSQL's are) and which counts commits that write a chunk record
// naming bytes that are not durable yet: breaches of ordered mode.
type orderedMeta struct {
	meta.Store
	blobs    *lazyBlobs
	breaches atomic.Int64
}

func (*orderedMeta) CommitsDurable() {}

func (m *orderedMeta) NewBatch() meta.Batch { return &orderedBatch{Batch: m.Store.NewBatch(), m: m} }

type orderedBatch struct {
	meta.Batch
	m    *orderedMeta
	locs []blob.Loc // of the chunk records written
}

func (b *orderedBatch) Set(key, value []byte) error {
	if lo, hi := schema.ChunkRange(); bytes.Compare(key, lo) >= 0 && bytes.Compare(key, hi) < 0 {
		c, err := schema.DecodeChunk(value)
		if err != nil {
			return err
		}
		b.locs = append(b.locs, blob.Loc{Segment: c.Segment, Offset: c.Offset, Length: c.Stored})
	}
	return b.Batch.Set(key, value)
}

func (b *orderedBatch) Commit(sync bool) error {
	for _, loc := range b.locs {
		if !b.m.blobs.durable(loc) {
			b.m.breaches.Add(1)
		}
	}
	return b.Batch.Commit(sync)
}

// TestPipelinedCommitsKeepOrderedMode runs several writers, each a
// pipeline of CommitChunks calls (the namespace's streams: up to three
// batches of a file in flight, each stored while the one before waits
// for its bytes to become durable and commits, commits chained in order)
// on a store whose puts become durable after random delays and a
// metadata store whose commits are durable at once. No commit may name
// bytes that are not durable yet (it would if CommitChunks or Commit
// skipped the sync of the transaction's chunks), each file's commits
// happen in order, and every file reads back.
func TestPipelinedCommitsKeepOrderedMode(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	v := newEnv(t, Config{Chunking: policy(t, "cdc:4K:16K:64K")})
	v.e.Close()
	lazy := newLazyBlobs(v.blobs, seed)
	m := &orderedMeta{Store: v.meta, blobs: lazy}
	e, err := New(m, lazy, v.cfg, v.e.log)
	testutil.Check(t, err)
	v.e = e

	const files, batches, batchBytes, depth = 4, 12, 256 << 10, 3
	rng := rand.New(rand.NewPCG(seed, 4))
	data := make([][]byte, files)
	for i := range data {
		data[i] = testutil.RandBytes(rng, batches*batchBytes)
	}
	var wg sync.WaitGroup
	orders := make([][]int, files)
	for f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ino := uint64(100 + f)
			slots := make(chan struct{}, depth)
			var prev chan error
			for b := range batches {
				slots <- struct{}{}
				off := int64(b * batchBytes)
				chunks, n := Cut(e.Chunker(), off, data[f][off:off+batchBytes], true)
				if n != batchBytes {
					t.Errorf("file %d batch %d: cut %d of %d bytes", f, b, n, batchBytes)
					return
				}
				done, wait := make(chan error, 1), prev
				prev = done
				go func() {
					defer func() { <-slots }()
					before := func() error {
						if wait == nil {
							return nil
						}
						return <-wait // the previous batch's outcome; read by this batch only
					}
					done <- e.CommitChunks(chunks, before, func(tx *Tx) error {
						orders[f] = append(orders[f], b) // fill runs inside the transaction: serialized
						_, err := tx.WriteChunks(ino, chunks)
						return err
					})
				}()
			}
			if err := <-prev; err != nil {
				t.Errorf("file %d: %v", f, err)
			}
		}()
	}
	wg.Wait()
	if n := m.breaches.Load(); n > 0 {
		t.Fatalf("seed %d: %d chunk records committed before their bytes were durable", seed, n)
	}
	for f := range files {
		for i, b := range orders[f] {
			if b != i {
				t.Fatalf("seed %d: file %d committed batches in the order %v", seed, f, orders[f])
			}
		}
		buf := make([]byte, len(data[f]))
		testutil.Check(t, e.ReadAt(uint64(100+f), 0, buf))
		if !bytes.Equal(buf, data[f]) {
			t.Fatalf("seed %d: file %d reads back differently from byte %d", seed, f, firstDiff(buf, data[f]))
		}
	}
}

// TestStoreTurnKeepsFileOrder: a commit whose store waits for the one
// before stores its chunks after that one's, even when it starts first,
// so a sequential writer's pipelined commits leave the file's chunks in
// file order in the blob store; the commits themselves still overlap.
func TestStoreTurnKeepsFileOrder(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K")})
	data := testutil.RandBytes(rand.New(rand.NewPCG(12, 12)), 4<<20)
	half := int64(len(data) / 2)
	first, _ := Cut(v.e.Chunker(), 0, data[:half], true)
	second, _ := Cut(v.e.Chunker(), half, data[half:], true)
	firstStored := make(chan struct{})
	fill := func(chunks []*Prepared) func(tx *Tx) error {
		return func(tx *Tx) error {
			_, err := tx.WriteChunks(2, chunks)
			return err
		}
	}
	done := make(chan error, 1)
	go func() { // the second commit starts first and must wait for its turn
		done <- v.e.CommitChunksInTurn(second, StoreTurn{After: firstStored}, nil, fill(second))
	}()
	time.Sleep(50 * time.Millisecond) // no guarantee, only a chance for a broken turn to show
	testutil.Check(t, v.e.CommitChunksInTurn(first, StoreTurn{Done: firstStored}, nil, fill(first)))
	testutil.Check(t, <-done)
	all := append(slices.Clone(first), second...)
	for i := 1; i < len(all); i++ {
		a, b := all[i-1].loc, all[i].loc
		if cmp.Or(cmp.Compare(a.Segment, b.Segment), cmp.Compare(a.Offset, b.Offset)) >= 0 {
			t.Fatalf("chunk %d of the file is stored at %+v, before chunk %d at %+v", i, b, i-1, a)
		}
	}
	buf := make([]byte, len(data))
	testutil.Check(t, v.e.ReadAt(2, 0, buf))
	if !bytes.Equal(buf, data) {
		t.Fatal("the file reads back differently")
	}
}

// countingPutter counts StartPutMany calls; with memory set it is a
// blob.MemoryPutter.
type countingPutter struct {
	blob.Store
	starts atomic.Int64
}

func (c *countingPutter) StartPutMany(data [][]byte) (*blob.Writing, error) {
	c.starts.Add(1)
	return c.Store.StartPutMany(data)
}

type memoryPutter struct{ *countingPutter }

func (memoryPutter) PutsToMemory() {}

// Store hands a blob.MemoryPutter a batch's new chunks in one
// StartPutMany (so that the S3 store can cut them into full packs), and
// another store one per group of about storeGroupBytes; either way every
// chunk reads back from the location it got.
func TestStoreHandsMemoryPutterTheWholeBatch(t *testing.T) {
	data := testutil.RandBytes(rand.New(rand.NewPCG(5, 5)), 4*storeGroupBytes+12345)
	for _, memory := range []bool{false, true} {
		v := newEnv(t, Config{Chunking: policy(t, "cdc:4K:16K:64K")})
		v.e.Close()
		counting := &countingPutter{Store: v.blobs}
		var blobs blob.Store = counting
		if memory {
			blobs = memoryPutter{counting}
		}
		e, err := New(v.meta, blobs, v.cfg, v.e.log)
		testutil.Check(t, err)
		v.e = e
		chunks, n := Cut(e.Chunker(), 0, data, true)
		if n != len(data) {
			t.Fatalf("cut %d of %d bytes", n, len(data))
		}
		testutil.Check(t, e.Store(chunks))
		starts := counting.starts.Load()
		if memory && starts != 1 || !memory && starts < 4 {
			t.Errorf("memory putter %v: %d StartPutMany calls for %d bytes", memory, starts, len(data))
		}
		for _, p := range chunks {
			got, err := blobs.Read(p.loc, make([]byte, p.loc.Length))
			testutil.Check(t, err)
			if !bytes.Equal(got, data[p.Off:p.Off+int64(p.Len)]) {
				t.Fatalf("memory putter %v: chunk at %d reads back wrong", memory, p.Off)
			}
		}
		e.Discard(chunks)
	}
}
