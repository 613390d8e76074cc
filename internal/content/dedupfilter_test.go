package content

import (
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

func randHash(rng *rand.Rand) (h schema.Hash) {
	for i := range h {
		h[i] = byte(rng.Uint32())
	}
	return h
}

// TestDedupFilterHoldsWhatWasAdded: every hash added is held (a false
// "absent" would let a commit overwrite a record), and about 1 % of
// others look held at the size the filter was made for.
func TestDedupFilterHoldsWhatWasAdded(t *testing.T) {
	const n = 200 << 10
	rng := rand.New(rand.NewPCG(20, 20))
	f := newDedupFilter(n)
	added := make([]schema.Hash, n)
	for i := range added {
		added[i] = randHash(rng)
		f.add(added[i])
	}
	for i, h := range added {
		if !f.mayHold(h) {
			t.Fatalf("hash %d of %d added is not held", i, n)
		}
	}
	if f.full() {
		t.Error("full at the size it was made for")
	}
	f.add(randHash(rng))
	if !f.full() {
		t.Error("not full past the size it was made for")
	}
	fp := 0
	for range n {
		if f.mayHold(randHash(rng)) {
			fp++
		}
	}
	if rate := float64(fp) / n; rate > 0.03 {
		t.Errorf("%.2f %% false positives, want about 1 %%", 100*rate)
	}
	if newDedupFilter(filterMaxKeys+1) != nil {
		t.Error("a filter past filterMaxKeys")
	}
}

// readyFilter starts the engine's dedup filter and waits until it is
// built: its scan reads the chunk table, which tests that count reads of
// chunk records must not see.
func (v *env) readyFilter() *dedupFilter {
	v.t.Helper()
	var f *dedupFilter
	waitFor(v.t, "the dedup filter", func() bool { f = v.e.lookupFilter(); return f != nil })
	return f
}

// TestDedupFilterAnswersFreshLookups: the chunks of fresh data are found
// missing by the filter, without the store, and the same data written
// again (after a reopen, which builds the filter from the chunk table)
// is still deduplicated.
func TestDedupFilterAnswersFreshLookups(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), VerifyReads: true})
	v.readyFilter()
	data := testutil.RandBytes(rand.New(rand.NewPCG(21, 21)), 1<<20)
	v.write(2, 0, data)
	if n := v.e.counters.filterMisses.Load(); n != 256 {
		t.Errorf("the filter answered %d lookups of 256 fresh chunks", n)
	}
	v.reopen()
	v.readyFilter()
	v.write(3, 0, data)
	if n := v.e.counters.filterMisses.Load(); n != 0 {
		t.Errorf("the filter said %d chunks the table holds were missing", n)
	}
	if got := len(v.allChunks()); got != 256 {
		t.Errorf("%d chunk records after writing 256 chunks twice", got)
	}
	v.checkContent(3, data)
	v.checkInvariants()
}

// TestDedupFilterMissBeforeACommit: a chunk the filter finds missing
// while a commit creating it is about to land is counted once, by
// whichever commits second: the lookup read the createdLog's gen before
// the filter, so its commit looks the record up.
func TestDedupFilterMissBeforeACommit(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), VerifyReads: true})
	v.readyFilter()
	data := testutil.RandBytes(rand.New(rand.NewPCG(22, 22)), 64<<10)
	ps, _, err := v.e.Prepare(0, data, true) // missed by the filter
	if err != nil {
		t.Fatal(err)
	}
	if n := v.e.counters.filterMisses.Load(); n != 16 {
		t.Fatalf("the filter answered %d lookups of 16 fresh chunks", n)
	}
	v.write(3, 0, data) // creates the records first
	tx := v.begin()
	if _, err := tx.WriteChunks(2, ps); err != nil {
		tx.Abort()
		t.Fatal(err)
	}
	v.commit(tx)
	for h, c := range v.allChunks() {
		if c.Refs != 2 {
			t.Errorf("chunk %x has %d references, want 2", h[:4], c.Refs)
		}
	}
	v.checkContent(2, data)
	v.checkInvariants()
}

// TestDedupFilterMissesAnotherHostsChunk: a chunk another host created
// after this engine last took the transaction lock is missing from the
// filter, as from any lookup made before that host's commit; the commit
// of the copy this engine stored takes the other host's changes first,
// looks the record up and adds a reference to the other host's copy.
// Where the store cannot say which keys changed, the filter is dropped
// and lookups go to the store.
func TestDedupFilterMissesAnotherHostsChunk(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), VerifyReads: true})
	v.readyFilter()
	shared, later := testutil.SeededBytes(31, 4096), testutil.SeededBytes(32, 4096)
	theirs, _, err := v.e.Prepare(0, shared, true)
	testutil.Check(t, err)
	rec := v.commitAsOtherHost(theirs[0])
	misses := v.e.counters.filterMisses.Load()
	mine, _, err := v.e.Prepare(0, shared, true)
	testutil.Check(t, err)
	if v.e.counters.filterMisses.Load() != misses+1 {
		t.Fatal("the filter knew of a chunk only another host created")
	}
	v.takeForeign(meta.Changes{Keys: [][]byte{schema.ChunkKey(theirs[0].Hash)}})
	tx := v.begin()
	if _, err := tx.WriteChunks(1, mine); err != nil {
		tx.Abort()
		t.Fatal(err)
	}
	v.commit(tx)
	if c := v.allChunks()[theirs[0].Hash]; c.Refs != 2 || c.Segment != rec.Segment || c.Offset != rec.Offset {
		t.Fatalf("the chunk's record after the commit: %+v; want the other host's copy with 2 references", c)
	}
	v.checkContent(1, shared)

	// Changes the store cannot name drop the filter: a chunk another host
	// creates then is found by a lookup in the store.
	v.takeForeign(meta.Changes{All: true})
	if v.e.lookupFilter() != nil {
		t.Fatal("the filter is still trusted after changes nobody named")
	}
	theirs2, _, err := v.e.Prepare(0, later, true)
	testutil.Check(t, err)
	v.commitAsOtherHost(theirs2[0])
	misses = v.e.counters.filterMisses.Load()
	again, _, err := v.e.Prepare(0, later, true)
	testutil.Check(t, err)
	if again[0].hasBytes() {
		t.Fatal("a chunk in the table is not found by the lookup")
	}
	if v.e.counters.filterMisses.Load() != misses {
		t.Fatal("a dropped filter answered a lookup")
	}
}

// TestDedupFilterRebuiltWhenFull: a filter that holds more hashes than it
// was sized for is replaced by a larger one built from the chunk table;
// lookups go to the store meanwhile, and dedup stays right throughout.
func TestDedupFilterRebuiltWhenFull(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), VerifyReads: true})
	v.readyFilter()
	small := newDedupFilter(0) // room for filterMinKeys
	small.ready.Store(true)
	v.e.created.filter.Store(small)
	rng := rand.New(rand.NewPCG(23, 23))
	var files [][]byte
	for i := 0; i*256 <= filterMinKeys; i++ {
		files = append(files, testutil.RandBytes(rng, 1<<20))
		v.write(uint64(10+i), 0, files[i])
	}
	var f *dedupFilter
	waitFor(t, "a larger dedup filter", func() bool {
		f = v.e.created.readyFilter()
		return f != nil && f != small
	})
	if f.room <= small.room {
		t.Errorf("rebuilt for %d hashes, the full one had room for %d", f.room, small.room)
	}
	for i, data := range files {
		v.write(uint64(1000+i), 0, data)
	}
	if n := v.e.counters.filterMisses.Load(); n > int64(256*len(files)) {
		t.Errorf("the filter answered %d lookups; only the first %d chunks were new", n, 256*len(files))
	}
	for _, c := range v.allChunks() {
		if c.Refs != 2 {
			t.Fatalf("a chunk written twice has %d references", c.Refs)
		}
	}
	v.checkInvariants()
}
