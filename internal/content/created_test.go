package content

import (
	"math"
	"testing"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// Two writers prepare the same new chunk at once, both missing it in the
// chunk table; the second to commit must see the first one's record
// (createdLog says it may exist now) and add its reference, not write a
// record of its own over it. Without the log's check, the refcount ends
// at 1 with two extents naming the chunk.
func TestSecondWriterOfNewChunkSeesFirst(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), VerifyReads: true})
	data := testutil.SeededBytes(7, 4096)
	p1, _, err := v.e.Prepare(0, data, true)
	testutil.Check(t, err)
	p2, _, err := v.e.Prepare(0, data, true)
	testutil.Check(t, err)
	for ino, ps := range map[uint64][]*Prepared{1: p1, 2: p2} {
		tx := v.begin()
		if _, err := tx.WriteChunks(ino, ps); err != nil {
			tx.Abort()
			t.Fatal(err)
		}
		v.commit(tx)
	}
	c := v.allChunks()[schema.Sum(data)]
	if c.Refs != 2 {
		t.Fatalf("refcount %d after two files referenced the chunk; want 2", c.Refs)
	}
	v.checkInvariants()
}

// The log answers "may exist" for every hash created after a lookup's
// gen, across rotations, and for lookups older than what it holds.
func TestCreatedLogRotation(t *testing.T) {
	var l createdLog
	h := func(i int) schema.Hash { return schema.Sum([]byte{byte(i), byte(i >> 8), byte(i >> 16)}) }
	g0 := l.missGen()
	for i := range 3 * createdLogSize {
		l.record([]schema.Hash{h(i)})
	}
	if !l.mayExist(h(0), g0) {
		t.Fatal("a lookup older than the log's reach must be answered 'may exist'")
	}
	last := 3*createdLogSize - 1
	if !l.mayExist(h(last), l.missGen()-1) {
		t.Fatal("a hash created after the lookup's gen is not reported")
	}
	if l.mayExist(h(last), l.missGen()) {
		t.Fatal("a hash created before the lookup's gen is reported")
	}
	if l.mayExist(h(1<<22), l.missGen()-10) {
		t.Fatal("a hash never created is reported")
	}
}

// Another host's commit that created chunk records makes only those
// chunks "may exist": a chunk this engine prepared meanwhile and that the
// other host also created is looked up at commit and gains a reference
// (the record is not written over), while a chunk the other host did not
// touch is still known missing and costs no lookup.
func TestForeignChunkKeysAreLookedUpAgain(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), VerifyReads: true})
	shared, own := testutil.SeededBytes(8, 4096), testutil.SeededBytes(9, 4096)
	theirs, _, err := v.e.Prepare(0, shared, true)
	testutil.Check(t, err)
	mine, _, err := v.e.Prepare(0, shared, true)
	testutil.Check(t, err)
	other, _, err := v.e.Prepare(4096, own, true)
	testutil.Check(t, err)

	// The other host commits the shared chunk's record, naming its copy.
	p := theirs[0]
	rec := v.commitAsOtherHost(p)
	v.takeForeign(meta.Changes{Keys: [][]byte{schema.ChunkKey(p.Hash)}})

	tx := v.begin()
	if _, err := tx.WriteChunks(1, append(mine, other...)); err != nil {
		tx.Abort()
		t.Fatal(err)
	}
	if tx.knownMissing(p.Hash) {
		t.Error("a chunk another host created is still taken for missing")
	}
	if !tx.knownMissing(other[0].Hash) {
		t.Error("a chunk no other host touched is looked up again")
	}
	v.commit(tx)
	chunks := v.allChunks()
	if c := chunks[p.Hash]; c.Refs != 2 || c.Segment != rec.Segment || c.Offset != rec.Offset {
		t.Fatalf("the shared chunk's record after the commit: %+v; want the other host's copy with 2 references", c)
	}
	if c := chunks[other[0].Hash]; c.Refs != 1 {
		t.Fatalf("the own chunk's record: %+v, want 1 reference", c)
	}
}

// commitAsOtherHost commits, as another host would, the record of chunk
// p with one reference, naming p's stored copy; this engine learns of it
// only from takeForeign.
func (v *env) commitAsOtherHost(p *Prepared) schema.Chunk {
	v.t.Helper()
	rec := schema.Chunk{Segment: p.loc.Segment, Offset: p.loc.Offset, Stored: p.loc.Length, Raw: uint32(p.Len),
		Comp: p.comp, Refs: 1, Check: p.check, HasCheck: true}
	b := v.meta.NewBatch()
	testutil.Check(v.t, b.Set(schema.ChunkKey(p.Hash), rec.Encode()))
	testutil.Check(v.t, b.Commit(true))
	b.Close()
	return rec
}

// takeForeign does what a transaction that finds other hosts' commits
// does as it begins (txBatch): foreignCommits with what changed, at the
// volume version the store holds.
func (v *env) takeForeign(changed meta.Changes) {
	v.t.Helper()
	version := uint64(0)
	if raw, err := v.meta.Get(schema.KeyVersion); err == nil {
		version, err = schema.ParseU64(raw)
		testutil.Check(v.t, err)
	}
	v.e.txMu.Lock()
	err := v.e.foreignCommits(version, v.e.stats, changed)
	v.e.txMu.Unlock()
	testutil.Check(v.t, err)
}

// changedChunks is exact for chunk keys only: a range reaching into the
// chunk table, or everything, is not.
func TestChangedChunks(t *testing.T) {
	h := schema.Sum([]byte("x"))
	lo, hi := schema.ChunkRange()
	for name, tc := range map[string]struct {
		c     meta.Changes
		exact bool
		n     int
	}{
		"chunk key":       {meta.Changes{Keys: [][]byte{schema.ChunkKey(h), schema.KeyStats}}, true, 1},
		"no chunk":        {meta.Changes{Keys: [][]byte{schema.KeyStats}}, true, 0},
		"all":             {meta.Changes{All: true}, false, 0},
		"range over them": {meta.Changes{Ranges: [][2][]byte{{lo, hi}}}, false, 0},
		"range to end":    {meta.Changes{Ranges: [][2][]byte{{schema.KeyStats, nil}}}, false, 0},
	} {
		hs, exact := changedChunks(tc.c)
		if exact != tc.exact || len(hs) != tc.n {
			t.Errorf("%s: %d chunks, exact %v; want %d, %v", name, len(hs), exact, tc.n, tc.exact)
		}
	}
}

// A commit that references many chunks the volume holds reads their
// records together where each read is a round trip (PostgreSQL): an
// iterator seeking among scattered hashes would fetch a page per seek,
// under the volume's transaction lock.
func TestCommitReadsChunkRecordsTogether(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K")})
	counted, ok := v.meta.(interface{ RoundTrips() int64 })
	if !ok {
		t.Skip("the metadata store does not count round trips (DOPPEL_TEST_META=postgres does)")
	}
	data := testutil.SeededBytes(10, 4<<20) // 1024 chunks
	v.write(1, 0, data)
	ps, _, err := v.e.Prepare(0, data, true)
	testutil.Check(t, err)
	// The lock, the extent map of the new file, the chunk records, the
	// commit: an iterator would have needed 7 pages for the records alone.
	// The store's background queries (its session's heartbeat every 2 s,
	// a new connection's handshake) count too and can only add to a
	// commit's count: of up to three commits, the least must be in bounds.
	const want = 5
	n := int64(math.MaxInt64) // the least count so far
	refs := uint64(1)
	for try := 0; try < 3 && n > want; try++ {
		before := counted.RoundTrips()
		tx := v.begin()
		if _, err := tx.WriteChunks(uint64(2+try), ps); err != nil {
			tx.Abort()
			t.Fatal(err)
		}
		v.commit(tx)
		n = min(n, counted.RoundTrips()-before)
		refs++
	}
	if n > want {
		t.Errorf("a commit referencing 1024 held chunks cost %d round trips (the least of three commits)", n)
	}
	for _, c := range v.allChunks() {
		if c.Refs != refs {
			t.Fatalf("chunk with %d refs, want %d", c.Refs, refs)
		}
	}
}
