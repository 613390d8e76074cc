package content

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/chunker"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/sharedtest"
)

func TestDedupIdenticalData(t *testing.T) {
	v := newEnv(t, Config{Chunking: chunker.DefaultPolicy()})
	data := testutil.RandBytes(rand.New(rand.NewPCG(15, 16)), 4<<20)
	v.write(1, 0, data)
	first := v.e.Stats()
	usage := v.usage()
	if first.Chunks < 16 {
		t.Fatalf("only %d chunks for 4 MiB: chunking looks off", first.Chunks)
	}

	v.write(2, 0, data)
	second := v.e.Stats()
	if second.Chunks != first.Chunks || second.PhysicalBytes != first.PhysicalBytes || second.RawBytes != first.RawBytes {
		t.Errorf("second copy added chunks: %+v then %+v", first, second)
	}
	if second.LogicalBytes != 2*first.LogicalBytes {
		t.Errorf("LogicalBytes = %d, want %d", second.LogicalBytes, 2*first.LogicalBytes)
	}
	// The duplicate was recognised before storing, so nothing was written
	// (and nothing had to be given back).
	if u := v.usage(); u != usage {
		t.Errorf("blob usage grew from %d to %d", usage, u)
	}
	if rb := v.e.ReclaimedBytes(); rb != 0 {
		t.Errorf("ReclaimedBytes = %d: the duplicate was stored and freed", rb)
	}
	for _, c := range v.allChunks() {
		if c.Refs != 2 {
			t.Fatalf("chunk with %d refs, want 2", c.Refs)
		}
	}
	v.checkContent(2, data)
	v.checkInvariants()
}

func TestDedupShiftedData(t *testing.T) {
	// Content-defined chunking: inserting 3 bytes in front changes only the
	// chunks around the insertion.
	v := newEnv(t, Config{Chunking: chunker.DefaultPolicy()})
	r := rand.New(rand.NewPCG(17, 18))
	data := testutil.RandBytes(r, 4<<20)
	v.write(1, 0, data)
	first := v.e.Stats()

	shifted := append([]byte{1, 2, 3}, data...)
	v.write(2, 0, shifted)
	second := v.e.Stats()
	if added := second.Chunks - first.Chunks; added < 1 || added > 3 {
		t.Errorf("shifted copy added %d chunks (of %d), want 1..3", added, first.Chunks)
	}
	if extra := second.RawBytes - first.RawBytes; extra > 2*int64(chunker.DefaultPolicy().Max) {
		t.Errorf("shifted copy stored %d new bytes", extra)
	}
	v.checkContent(2, shifted)
	v.checkInvariants()
}

func TestDedupWithinOneWrite(t *testing.T) {
	// A block repeated within one write is stored once, referenced often.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:8K")})
	block := testutil.RandBytes(rand.New(rand.NewPCG(19, 20)), 8192)
	data := bytes.Repeat(block, 16)
	v.write(1, 0, data)
	chunks := v.allChunks()
	if len(chunks) != 1 {
		t.Fatalf("%d chunks, want 1", len(chunks))
	}
	for _, c := range chunks {
		if c.Refs != 16 {
			t.Errorf("Refs = %d, want 16", c.Refs)
		}
	}
	if u := v.usage(); u > 2*8192 {
		t.Errorf("blob store uses %d bytes for one 8 KiB chunk", u)
	}
	v.checkContent(1, data)
	v.checkInvariants()
}

// TestSameNewChunkPreparedTwiceInOneTx mirrors a flush of a file with two
// buffered runs holding the same new data (e.g. a block written at two
// places): each run is prepared separately, so each stores the chunk; the
// transaction keeps one copy and must give the other's space back.
func TestSameNewChunkPreparedTwiceInOneTx(t *testing.T) {
	needSegmentFiles(t, "measures freed space by the blob store's Usage; an S3 pack keeps a freed chunk's bytes (a dead span) until the whole pack is dead or a compaction pass rewrites it, which the test does not run")
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K")})
	tx, data := v.preparedTwiceInOneTx(21, 22)
	v.commit(tx)
	v.checkContent(1, append(append(bytes.Clone(data), make([]byte, 7<<20)...), data...))
	v.checkInvariants()

	// Everything referenced is one copy of data; the rest must be freed.
	v.reopen() // Close reclaims what is pending
	live := v.e.Stats().PhysicalBytes
	if u := v.usage(); u > live+64<<10 {
		t.Errorf("blob store holds %d bytes for %d bytes of live chunks: %d bytes leaked",
			u, live, u-live)
	}

	// Dropping every reference must give all space back.
	v.do(func(tx *Tx) error { return tx.DropAll(1) })
	v.reopen()
	if u := v.usage(); u > 64<<10 {
		t.Errorf("blob store holds %d bytes with no chunk referenced", u)
	}
}

// TestSameNewChunkPreparedTwiceAborted: an aborted transaction must give
// back everything its Prepares stored, duplicates included.
func TestSameNewChunkPreparedTwiceAborted(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K")})
	tx, _ := v.preparedTwiceInOneTx(23, 24)
	tx.Abort()
	if u := v.usage(); u > 64<<10 {
		t.Errorf("blob store holds %d bytes after the only transaction aborted", u)
	}
	if st := v.e.Stats(); st != (schema.Stats{}) {
		t.Errorf("stats after abort: %+v", st)
	}
}

func TestDuplicateStoredByConcurrentPrepare(t *testing.T) {
	needSegmentFiles(t, "measures freed space by the blob store's Usage; an S3 pack keeps a freed chunk's bytes (a dead span) until the whole pack is dead or a compaction pass rewrites it, which the test does not run")
	// Two files prepare the same new data before either commits (parallel
	// writers): the second commit finds the chunk and frees its own copy.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K")})
	data := testutil.RandBytes(rand.New(rand.NewPCG(25, 26)), 512<<10)
	ps1, _, err := v.e.Prepare(0, data, true)
	if err != nil {
		t.Fatal(err)
	}
	ps2, _, err := v.e.Prepare(0, data, true)
	if err != nil {
		t.Fatal(err)
	}
	for ino, ps := range map[uint64][]*Prepared{1: ps1, 2: ps2} {
		tx := v.begin()
		if _, err := tx.WriteChunks(ino, ps); err != nil {
			t.Fatal(err)
		}
		v.commit(tx)
	}
	if got := v.e.ReclaimedBytes(); got != int64(len(data)) {
		t.Errorf("ReclaimedBytes = %d, want %d (the duplicate copy)", got, len(data))
	}
	if u, live := v.usage(), v.e.Stats().PhysicalBytes; u > live+64<<10 {
		t.Errorf("blob store holds %d bytes for %d live", u, live)
	}
	v.checkContent(1, data)
	v.checkContent(2, data)
	v.checkInvariants()
}

func TestChunkFreedBetweenPrepareAndCommit(t *testing.T) {
	// Prepare dedups against a chunk that exists; if the chunk's last
	// reference goes before the commit, the commit must store it again.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K")})
	data := testutil.RandBytes(rand.New(rand.NewPCG(27, 28)), 16384)
	v.write(1, 0, data)
	ps, _, err := v.e.Prepare(0, data, true)
	if err != nil {
		t.Fatal(err)
	}
	v.do(func(tx *Tx) error { return tx.DropAll(1) })
	v.reopen() // make sure the freed chunks are punched out
	// ps belongs to the old engine's Prepare, but Prepared is plain data.
	tx := v.begin()
	if _, err := tx.WriteChunks(2, ps); err != nil {
		t.Fatal(err)
	}
	v.commit(tx)
	v.reopen() // cold cache: read from the blob store
	v.checkContent(2, data)
	v.checkInvariants()
}

func TestRewriteSameDataInOneTx(t *testing.T) {
	// Dropping a chunk's last reference and taking it again in the same
	// transaction must not free it.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K")})
	data := testutil.RandBytes(rand.New(rand.NewPCG(29, 30)), 16384)
	v.write(1, 0, data)
	ps, _, err := v.e.Prepare(0, data, true)
	if err != nil {
		t.Fatal(err)
	}
	v.do(func(tx *Tx) error {
		if err := tx.DropAll(1); err != nil {
			return err
		}
		_, err := tx.WriteChunks(1, ps)
		return err
	})
	v.reopen()
	if got := v.e.ReclaimedBytes(); got != 0 {
		t.Errorf("ReclaimedBytes = %d, want 0", got)
	}
	v.checkContent(1, data)
	v.checkInvariants()
}

// Deferred dedup (DeferDedup, --dedup=background): a write of data the
// volume holds stores it again without asking the chunk table; its commit
// finds the chunks, counts the new references exactly and frees the new
// copy, so the final space is what inline dedup gives.
func TestDeferredDedup(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K"), DeferDedup: true})
	data := testutil.RandBytes(rand.New(rand.NewPCG(29, 30)), 1<<20)
	v.write(1, 0, data)
	first := v.e.Stats()
	stored := v.e.Counters().StoredBytes
	v.write(2, 0, data)
	if got := v.e.Counters().StoredBytes - stored; got < int64(len(data)) {
		t.Errorf("the second write stored %d bytes; deferred dedup stores all %d before it merges", got, len(data))
	}
	if s := v.e.Stats(); s.Chunks != first.Chunks || s.PhysicalBytes != first.PhysicalBytes {
		t.Errorf("after the merge the volume holds %+v, want the first write's %+v", s, first)
	}
	for _, c := range v.allChunks() {
		if c.Refs != 2 {
			t.Fatalf("chunk with %d refs, want 2", c.Refs)
		}
	}
	if got := v.e.ReclaimedBytes(); got != int64(len(data)) {
		t.Errorf("ReclaimedBytes = %d, want %d (the second copy)", got, len(data))
	}
	if !sharedtest.S3() {
		// An S3 pack keeps the freed copy as a dead span until compaction.
		if u, live := v.usage(), v.e.Stats().PhysicalBytes; u > live+64<<10 {
			t.Errorf("blob store holds %d bytes for %d live", u, live)
		}
	}
	v.checkContent(1, data)
	v.checkContent(2, data)

	// New data: looked up while it was being stored, so its commit knows
	// the chunks are missing and reads no record under the lock.
	fresh := testutil.RandBytes(rand.New(rand.NewPCG(31, 32)), 256<<10)
	ps, _, err := v.e.Prepare(0, fresh, true)
	testutil.Check(t, err)
	tx := v.begin()
	if _, err := tx.WriteChunks(3, ps); err != nil {
		tx.Abort()
		t.Fatal(err)
	}
	for _, p := range ps {
		if !tx.knownMissing(p.Hash) {
			t.Fatalf("a new chunk stored with deferred dedup is looked up again at commit")
		}
	}
	v.commit(tx)
	v.checkContent(3, fresh)
	v.checkInvariants()
}

// preparedTwiceInOneTx prepares the same 1 MiB of random data (seeded by
// s1, s2) twice, at offsets 0 and 8 MiB of inode 1, and writes both in one
// open transaction, which it returns with the data.
func (v *env) preparedTwiceInOneTx(s1, s2 uint64) (*Tx, []byte) {
	v.t.Helper()
	data := testutil.RandBytes(rand.New(rand.NewPCG(s1, s2)), 1<<20)
	var prepared [][]*Prepared
	for _, off := range []int64{0, 8 << 20} {
		ps, _, err := v.e.Prepare(off, data, true)
		if err != nil {
			v.t.Fatal(err)
		}
		prepared = append(prepared, ps)
	}
	tx := v.begin()
	for _, ps := range prepared {
		if _, err := tx.WriteChunks(1, ps); err != nil {
			v.t.Fatal(err)
		}
	}
	return tx, data
}
