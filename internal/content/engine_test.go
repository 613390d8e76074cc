package content

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/doppelfs/doppel/internal/chunker"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/sharedtest"
)

// smallCDC keeps chunk counts high on small test data.
const smallCDC = "cdc:1K:4K:16K"

func TestWriteRead(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name   string
		policy string
		off    int64
		n      int
	}{
		{"one byte", smallCDC, 0, 1},
		{"below min chunk", smallCDC, 0, 100},
		{"unaligned offset", smallCDC, 12345, 70000},
		{"large offset", smallCDC, 1 << 40, 20000},
		{"fixed aligned", "fixed:4K", 8192, 3 * 4096},
		{"fixed unaligned", "fixed:4K", 1000, 10000},
		{"default policy", "cdc", 7, 600 << 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t, Config{Chunking: policy(t, tc.policy)})
			data := testutil.RandBytes(r, tc.n)
			if mapped := v.write(1, tc.off, data); mapped != int64(tc.n) {
				t.Errorf("WriteChunks mapped %d, want %d", mapped, tc.n)
			}
			if got := v.read(1, tc.off, tc.n); !bytes.Equal(got, data) {
				t.Fatalf("read back differs at %d", firstDiff(got, data))
			}
			// Around the data is hole.
			if tc.off > 0 {
				if got := v.read(1, tc.off-1, 1); got[0] != 0 {
					t.Errorf("byte before the data = %#x", got[0])
				}
			}
			if got := v.read(1, tc.off+int64(tc.n), 10); !bytes.Equal(got, make([]byte, 10)) {
				t.Errorf("bytes after the data = %x", got)
			}
			// Partial reads of a chunk's middle.
			mid := tc.n / 3
			if got := v.read(1, tc.off+int64(mid), tc.n/3+1); !bytes.Equal(got, data[mid:mid+tc.n/3+1]) {
				t.Errorf("partial read differs")
			}
			// Another inode is unaffected.
			if got := v.read(2, tc.off, 16); !bytes.Equal(got, make([]byte, 16)) {
				t.Errorf("other inode reads %x", got)
			}
			v.checkInvariants()
			if st := v.e.Stats(); st.LogicalBytes != int64(tc.n) || st.RawBytes != int64(tc.n) {
				t.Errorf("stats %+v, want %d logical and raw bytes", st, tc.n)
			}
			// The same through an engine with a cold cache.
			v.reopen()
			if got := v.read(1, tc.off, tc.n); !bytes.Equal(got, data) {
				t.Fatalf("read back after reopen differs at %d", firstDiff(got, data))
			}
		})
	}
}

func TestOverwritePartsOfChunks(t *testing.T) {
	// An overwrite inside a chunk keeps the old chunk for the untouched
	// parts: extents then reference chunk middles.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K")})
	r := rand.New(rand.NewPCG(3, 4))
	ref := testutil.RandBytes(r, 256<<10)
	v.write(1, 0, ref)
	for _, w := range []struct {
		off int64
		n   int
	}{{100, 10}, {65530, 20}, {3000, 70000}, {0, 1}, {256<<10 - 1, 5}} {
		p := testutil.RandBytes(r, w.n)
		v.write(1, w.off, p)
		if end := int(w.off) + w.n; end > len(ref) {
			ref = append(ref, make([]byte, end-len(ref))...)
		}
		copy(ref[w.off:], p)
		v.checkContent(1, ref)
		v.checkInvariants()
	}
	if st := v.e.Stats(); st.LogicalBytes != int64(len(ref)) {
		t.Errorf("LogicalBytes = %d, want %d", st.LogicalBytes, len(ref))
	}
}

func TestPunch(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, smallCDC)})
	r := rand.New(rand.NewPCG(5, 6))
	ref := testutil.RandBytes(r, 100000)
	v.write(1, 0, ref)
	live := make([]bool, len(ref))
	for i := range live {
		live[i] = true
	}
	for _, p := range []struct{ start, end int64 }{
		{10, 20}, {5000, 30000}, {0, 1}, {99990, 200000}, {40000, 40001}, {50000, 50000}, {25000, 60000},
	} {
		var mapped int64
		v.do(func(tx *Tx) (err error) {
			mapped, err = tx.Punch(1, p.start, p.end)
			return err
		})
		// Random data has no zero chunks: every byte not yet punched is
		// mapped, and punching it unmaps it.
		var want int64
		for i := p.start; i < min(p.end, int64(len(ref))); i++ {
			if live[i] {
				want--
			}
			live[i], ref[i] = false, 0
		}
		if mapped != want {
			t.Errorf("Punch(%d, %d) = %d mapped bytes, want %d", p.start, p.end, mapped, want)
		}
		v.checkContent(1, ref)
		v.checkInvariants()
	}
}

func TestPunchReturnsMappedDelta(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K")})
	v.write(1, 0, bytes.Repeat([]byte{7}, 40960))
	tests := []struct {
		start, end int64
		want       int64
	}{
		{100, 200, -100},
		{100, 200, 0}, // already a hole
		{4000, 9000, -5000},
		{0, math.MaxInt64, -(40960 - 100 - 5000)},
	}
	for _, tc := range tests {
		var got int64
		v.do(func(tx *Tx) (err error) {
			got, err = tx.Punch(1, tc.start, tc.end)
			return err
		})
		if got != tc.want {
			t.Errorf("Punch(%d, %d) = %d, want %d", tc.start, tc.end, got, tc.want)
		}
	}
	if st := v.e.Stats(); st != (schema.Stats{}) {
		t.Errorf("stats after punching everything: %+v", st)
	}
	v.checkInvariants()
}

func TestCopySharesChunks(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, smallCDC)})
	r := rand.New(rand.NewPCG(7, 8))
	data := testutil.RandBytes(r, 200000)
	v.write(1, 0, data)
	before := v.e.Stats()

	var mapped int64
	v.do(func(tx *Tx) (err error) {
		mapped, err = tx.Copy(1, 1000, 2, 5000, 150000)
		return err
	})
	if mapped != 150000 {
		t.Errorf("Copy mapped %d, want 150000", mapped)
	}
	after := v.e.Stats()
	if after.Chunks != before.Chunks || after.PhysicalBytes != before.PhysicalBytes {
		t.Errorf("Copy changed stored chunks: before %+v after %+v", before, after)
	}
	if after.LogicalBytes != before.LogicalBytes+150000 {
		t.Errorf("LogicalBytes %d, want %d", after.LogicalBytes, before.LogicalBytes+150000)
	}
	want := make([]byte, 155000)
	copy(want[5000:], data[1000:151000])
	v.checkContent(2, want)
	v.checkInvariants()

	// The source can go; the copy keeps its chunks alive.
	v.do(func(tx *Tx) error { return tx.DropAll(1) })
	v.reopen() // reclaims what was freed, and empties the cache
	v.checkContent(2, want)
	v.checkInvariants()
}

func TestCopyWithinInode(t *testing.T) {
	// Non-overlapping ranges of one inode (the namespace refuses overlap).
	v := newEnv(t, Config{Chunking: policy(t, smallCDC)})
	r := rand.New(rand.NewPCG(9, 10))
	ref := testutil.RandBytes(r, 60000)
	v.write(1, 0, ref)
	v.do(func(tx *Tx) error { _, err := tx.Copy(1, 10000, 1, 40000, 20000); return err })
	copy(ref[40000:], bytes.Clone(ref[10000:30000]))
	v.checkContent(1, ref)
	v.do(func(tx *Tx) error { _, err := tx.Copy(1, 0, 1, 100000, 60000); return err })
	ref = append(ref, make([]byte, 100000-len(ref))...)
	ref = append(ref, ref[:60000]...)
	v.checkContent(1, ref)
	v.checkInvariants()
}

func TestCopyOfHoleMakesHole(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K")})
	v.write(1, 0, bytes.Repeat([]byte{1}, 8192))
	v.write(2, 0, bytes.Repeat([]byte{2}, 20000))
	var mapped int64
	v.do(func(tx *Tx) (err error) { mapped, err = tx.Copy(1, 8192, 2, 4096, 8192); return err })
	if mapped != -8192 {
		t.Errorf("copying a hole over data: mapped %d, want -8192", mapped)
	}
	want := bytes.Repeat([]byte{2}, 20000)
	clear(want[4096:12288])
	v.checkContent(2, want)
	v.checkInvariants()
}

func TestDropAll(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, smallCDC)})
	r := rand.New(rand.NewPCG(11, 12))
	v.write(1, 0, testutil.RandBytes(r, 50000))
	v.write(1, 1<<30, testutil.RandBytes(r, 50000))
	v.write(2, 0, testutil.RandBytes(r, 1000))
	v.do(func(tx *Tx) error { return tx.DropAll(1) })
	if got := v.read(1, 0, 50000); !bytes.Equal(got, make([]byte, 50000)) {
		t.Error("dropped inode still has data")
	}
	if d, err := v.e.SeekData(v.meta, 1, 0); err != nil || d != -1 {
		t.Errorf("SeekData of dropped inode = %d, %v", d, err)
	}
	if st := v.e.Stats(); st.LogicalBytes != 1000 {
		t.Errorf("LogicalBytes = %d, want 1000", st.LogicalBytes)
	}
	v.checkInvariants()
}

func TestZeroDataIsHole(t *testing.T) {
	v := newEnv(t, Config{Chunking: chunker.DefaultPolicy()})
	zeros := make([]byte, 1<<20)
	if mapped := v.write(1, 4096, zeros); mapped != 0 {
		t.Errorf("writing zeros mapped %d bytes", mapped)
	}
	if st := v.e.Stats(); st != (schema.Stats{}) {
		t.Errorf("stats after writing zeros: %+v", st)
	}
	if n := len(v.allChunks()) + len(v.allExtents()); n != 0 {
		t.Errorf("writing zeros created %d records", n)
	}
	if got := v.read(1, 0, len(zeros)+8192); !bytes.Equal(got, make([]byte, len(got))) {
		t.Error("zeros do not read back as zeros")
	}
	if d, _ := v.e.SeekData(v.meta, 1, 0); d != -1 {
		t.Errorf("SeekData = %d, want -1 (all hole)", d)
	}
	if u := v.usage(); u != 0 {
		t.Errorf("blob store uses %d bytes after writing only zeros", u)
	}
}

func TestOverwriteWithZerosPunches(t *testing.T) {
	// Zeros written over data free the data's chunks rather than storing
	// zeros: the range becomes a hole.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K")})
	r := rand.New(rand.NewPCG(13, 14))
	data := testutil.RandBytes(r, 16384)
	v.write(1, 0, data)
	mapped := v.write(1, 4096, make([]byte, 8192))
	if mapped != -8192 {
		t.Errorf("zero overwrite mapped %d, want -8192", mapped)
	}
	clear(data[4096:12288])
	v.checkContent(1, data)
	if st := v.e.Stats(); st.Chunks != 2 || st.LogicalBytes != 8192 {
		t.Errorf("stats %+v, want 2 chunks and 8192 logical bytes", st)
	}
	if h, _ := v.e.SeekHole(v.meta, 1, 0); h != 4096 {
		t.Errorf("SeekHole(0) = %d, want 4096", h)
	}
	v.checkInvariants()
}

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
	data := testutil.RandBytes(rand.New(rand.NewPCG(21, 22)), 1<<20)

	ps1, _, err := v.e.Prepare(0, data, true)
	if err != nil {
		t.Fatal(err)
	}
	ps2, _, err := v.e.Prepare(8<<20, data, true)
	if err != nil {
		t.Fatal(err)
	}
	tx := v.begin()
	for _, ps := range [][]*Prepared{ps1, ps2} {
		if _, err := tx.WriteChunks(1, ps); err != nil {
			t.Fatal(err)
		}
	}
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
	data := testutil.RandBytes(rand.New(rand.NewPCG(23, 24)), 1<<20)
	ps1, _, err := v.e.Prepare(0, data, true)
	if err != nil {
		t.Fatal(err)
	}
	ps2, _, err := v.e.Prepare(8<<20, data, true)
	if err != nil {
		t.Fatal(err)
	}
	tx := v.begin()
	for _, ps := range [][]*Prepared{ps1, ps2} {
		if _, err := tx.WriteChunks(1, ps); err != nil {
			t.Fatal(err)
		}
	}
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

func TestStreamingPrepare(t *testing.T) {
	// A streaming flush prepares without final, commits the decided chunks,
	// and later prepares the rest: the result must equal a one-shot write,
	// chunk for chunk.
	r := rand.New(rand.NewPCG(31, 32))
	data := testutil.RandBytes(r, 300000)
	oneShot := newEnv(t, Config{Chunking: policy(t, smallCDC)})
	oneShot.write(1, 0, data)

	v := newEnv(t, Config{Chunking: policy(t, smallCDC)})
	var off int64
	for _, n := range []int{50000, 120000, 300000} {
		ps, consumed, err := v.e.Prepare(off, data[off:n], false)
		if err != nil {
			t.Fatal(err)
		}
		if consumed == 0 {
			continue
		}
		v.do(func(tx *Tx) error { _, err := tx.WriteChunks(1, ps); return err })
		off += int64(consumed)
	}
	if off < int64(len(data)) {
		v.write(1, off, data[off:])
	}
	v.checkContent(1, data)
	v.checkInvariants()
	if a, b := oneShot.allExtents(), v.allExtents(); len(a) != len(b) {
		t.Errorf("one-shot write has %d extents, streaming %d", len(a), len(b))
	} else {
		for i := range a {
			if a[i] != b[i] {
				t.Errorf("extent %d: one-shot %+v, streaming %+v", i, a[i], b[i])
				break
			}
		}
	}
}

func TestTxVersionJournalAndInodes(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, smallCDC)})
	tx := v.begin()
	if tx.Version() != 1 {
		t.Errorf("first version %d, want 1", tx.Version())
	}
	tx.AddInodes(3)
	if err := tx.Journal(7, schema.OpCreate); err != nil {
		t.Fatal(err)
	}
	v.commit(tx)

	tx = v.begin()
	if tx.Version() != 2 {
		t.Errorf("second version %d, want 2", tx.Version())
	}
	tx.AddInodes(5)
	tx.Abort()
	tx.Abort() // harmless
	if err := tx.Commit(false); err == nil {
		t.Error("Commit after Abort succeeded")
	}

	tx = v.begin() // the aborted transaction released the lock and its version
	if tx.Version() != 2 {
		t.Errorf("version after abort %d, want 2", tx.Version())
	}
	tx.AddInodes(-1)
	if err := tx.Commit(true); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(false); err == nil {
		t.Error("second Commit succeeded")
	}
	tx.Abort() // after Commit: must not unlock again

	if st := v.e.Stats(); st.Inodes != 2 {
		t.Errorf("Inodes = %d, want 2", st.Inodes)
	}
	b, err := v.meta.Get(schema.JournalKey(1, 7))
	if err != nil {
		t.Fatal(err)
	}
	if j, err := schema.DecodeJournalEntry(b); err != nil || j.Op != schema.OpCreate {
		t.Errorf("journal entry %+v, %v", j, err)
	}
	v.reopen()
	if st := v.e.Stats(); st.Inodes != 2 {
		t.Errorf("Inodes after reopen = %d, want 2", st.Inodes)
	}
	if tx := v.begin(); tx.Version() != 3 {
		t.Errorf("version after reopen %d, want 3", tx.Version())
		tx.Abort()
	} else {
		tx.Abort()
	}
}

func TestStatsSurviveReopen(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, smallCDC), Compression: "zstd"})
	r := rand.New(rand.NewPCG(33, 34))
	v.write(1, 0, textBytes(r, 100000))
	v.write(2, 0, testutil.RandBytes(r, 100000))
	v.do(func(tx *Tx) error { _, err := tx.Copy(1, 0, 3, 0, 50000); return err })
	before := v.e.Stats()
	v.reopen()
	if after := v.e.Stats(); after != before {
		t.Errorf("stats after reopen %+v, before %+v", after, before)
	}
	v.checkInvariants()
}

func TestNewRejects(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, smallCDC)})
	logDiscard := v.e.log
	if _, err := New(v.meta, v.blobs, Config{Chunking: chunker.Policy{Kind: "cdc", Min: 1}}, logDiscard); err == nil {
		t.Error("New accepted an invalid chunking policy")
	}
	if _, err := New(v.meta, v.blobs, Config{Chunking: policy(t, smallCDC), Compression: "lz4"}, logDiscard); err == nil {
		t.Error("New accepted an unknown compression")
	}
	b := v.meta.NewBatch()
	b.Set(schema.KeyStats, []byte{9, 9})
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, err := New(v.meta, v.blobs, Config{Chunking: policy(t, smallCDC)}, logDiscard); err == nil {
		t.Error("New accepted damaged stats")
	}
}

func TestCompressionZstd(t *testing.T) {
	v := newEnv(t, Config{Chunking: chunker.DefaultPolicy(), Compression: "zstd"})
	r := rand.New(rand.NewPCG(35, 36))
	text := textBytes(r, 1<<20)
	v.write(1, 0, text)
	st := v.e.Stats()
	if st.PhysicalBytes >= st.RawBytes || st.RawBytes != int64(len(text)) {
		t.Errorf("compressible data: PhysicalBytes %d, RawBytes %d", st.PhysicalBytes, st.RawBytes)
	}
	for h, c := range v.allChunks() {
		if c.Comp != schema.CompZstd || c.Stored >= c.Raw {
			t.Errorf("chunk %x: comp %d, stored %d of %d", h[:8], c.Comp, c.Stored, c.Raw)
		}
	}
	// Random data does not compress and is kept as is, even under zstd.
	v.write(2, 0, testutil.RandBytes(r, 200000))
	v.reopen() // cold cache: decompress from the blob store
	v.checkContent(1, text)
	v.checkInvariants()
}

func TestCompressionAuto(t *testing.T) {
	v := newEnv(t, Config{Chunking: chunker.DefaultPolicy(), Compression: "auto"})
	r := rand.New(rand.NewPCG(37, 38))
	random := testutil.RandBytes(r, 1<<20)
	v.write(1, 0, random)
	st := v.e.Stats()
	if st.PhysicalBytes != st.RawBytes {
		t.Errorf("incompressible data: PhysicalBytes %d != RawBytes %d", st.PhysicalBytes, st.RawBytes)
	}
	for h, c := range v.allChunks() {
		if c.Comp != schema.CompNone || c.Stored != c.Raw {
			t.Errorf("chunk %x: comp %d, stored %d of %d", h[:8], c.Comp, c.Stored, c.Raw)
		}
	}
	text := textBytes(r, 1<<20)
	v.write(2, 0, text)
	if st2 := v.e.Stats(); st2.PhysicalBytes-st.PhysicalBytes >= st2.RawBytes-st.RawBytes {
		t.Errorf("auto did not compress text: %d stored for %d raw", st2.PhysicalBytes-st.PhysicalBytes, st2.RawBytes-st.RawBytes)
	}
	v.reopen()
	v.checkContent(1, random)
	v.checkContent(2, text)
	v.checkInvariants()
}

func TestCompressionAutoSkipsSmallSavings(t *testing.T) {
	// Data that compresses by a few percent: zstd keeps the saving, auto
	// stores it raw (savings under 1/8 are not worth decompressing).
	// Each 64 KiB chunk: 5 KiB of zeros, then random bytes (~8% saving).
	r := rand.New(rand.NewPCG(39, 40))
	data := testutil.RandBytes(r, 256<<10)
	for off := 0; off < len(data); off += 64 << 10 {
		clear(data[off : off+5<<10])
	}
	for _, mode := range []string{"zstd", "auto"} {
		v := newEnv(t, Config{Chunking: policy(t, "fixed:64K"), Compression: mode})
		v.write(1, 0, data)
		st := v.e.Stats()
		saving := float64(st.RawBytes-st.PhysicalBytes) / float64(st.RawBytes)
		switch mode {
		case "zstd":
			if saving <= 0 || saving >= 1.0/8 {
				t.Skipf("zstd saves %.1f%% on this data; the test needs a small saving", 100*saving)
			}
		case "auto":
			if st.PhysicalBytes != st.RawBytes {
				t.Errorf("auto stored %d bytes for %d raw: small saving kept", st.PhysicalBytes, st.RawBytes)
			}
		}
		v.checkContent(1, data)
	}
}

// segmentPath returns the file of a chunk's segment.
func (v *env) segmentPath(c schema.Chunk) string {
	return filepath.Join(v.dir, "chunks", blobSegName(c.Segment))
}

func blobSegName(num uint32) string {
	const hexdigits = "0123456789abcdef"
	b := []byte("seg-00000000")
	for i := 11; i >= 4; i-- {
		b[i] = hexdigits[num&15]
		num >>= 4
	}
	return string(b)
}

// flipByte damages one stored byte of chunk c.
func (v *env) flipByte(c schema.Chunk, at int64) {
	v.t.Helper()
	f, err := os.OpenFile(v.segmentPath(c), os.O_RDWR, 0)
	if err != nil {
		v.t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	off := int64(c.Offset) + at
	if _, err := f.ReadAt(b, off); err != nil {
		v.t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, off); err != nil {
		v.t.Fatal(err)
	}
}

func TestVerifyReadsDetectsCorruption(t *testing.T) {
	needSegmentFiles(t, "damages segment files; the chunk data is in S3")
	v := newEnv(t, Config{Chunking: policy(t, "fixed:16K"), VerifyReads: true})
	r := rand.New(rand.NewPCG(41, 42))
	data := testutil.RandBytes(r, 64<<10)
	v.write(1, 0, data)
	if err := v.e.Sync(); err != nil {
		t.Fatal(err)
	}

	// Damage the chunk holding file bytes [16K, 32K).
	exts, err := Extents(v.meta, 1, 20000, 20001)
	if err != nil || len(exts) != 1 {
		t.Fatalf("Extents: %v, %v", exts, err)
	}
	c := v.allChunks()[exts[0].Hash]
	v.flipByte(c, 1234)

	// The running engine may have the chunk cached; a new one must go to
	// the blob store.
	v.reopen()
	buf := make([]byte, len(data))
	err = v.e.ReadAt(1, 0, buf)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadAt over damaged chunk: err = %v, want ErrCorrupt", err)
	}
	// Undamaged chunks still read.
	if got := v.read(1, 0, 16<<10); !bytes.Equal(got, data[:16<<10]) {
		t.Error("undamaged chunk reads wrong")
	}
	if got := v.read(1, 32<<10, 32<<10); !bytes.Equal(got, data[32<<10:]) {
		t.Error("undamaged chunks read wrong")
	}
	// A damaged chunk is not cached as good: reading it again still fails.
	if err := v.e.ReadAt(1, 20000, make([]byte, 10)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("second read of damaged chunk: err = %v, want ErrCorrupt", err)
	}
}

// TestReadsVerifyChecks: new chunk records carry a check of the bytes,
// which reads verify; damage under a check, or under an old record
// without one (verified by the hash), is reported; a wrong check over
// intact bytes does not make them unreadable.
func TestReadsVerifyChecks(t *testing.T) {
	needSegmentFiles(t, "damages segment files; the chunk data is in S3")
	v := newEnv(t, Config{Chunking: policy(t, "fixed:16K"), VerifyReads: true})
	data := testutil.RandBytes(rand.New(rand.NewPCG(47, 48)), 3*16<<10)
	v.write(1, 0, data)
	chunks := v.allChunks()
	piece := func(i int) []byte { return data[i*16<<10 : (i+1)*16<<10] }
	recs := make([]schema.Chunk, 3)
	hashes := make([]schema.Hash, 3)
	for i := range 3 {
		hashes[i] = schema.Sum(piece(i))
		c, ok := chunks[hashes[i]]
		if !ok || !c.HasCheck || c.Check != schema.CheckSum(piece(i)) {
			t.Fatalf("chunk %d: record %+v (found %v), want a check of %016x", i, c, ok, schema.CheckSum(piece(i)))
		}
		recs[i] = c
	}
	legacy := recs[0]
	legacy.Check, legacy.HasCheck = 0, false
	v.setChunk(hashes[0], legacy) // as written before checks existed
	wrong := recs[1]
	wrong.Check++
	v.setChunk(hashes[1], wrong)
	v.reopen()
	v.checkContent(1, data)

	v.flipByte(recs[0], 100)
	v.flipByte(recs[2], 200)
	v.reopen()
	for i, want := range []bool{true, false, true} {
		err := v.e.ReadAt(1, int64(i*16<<10), make([]byte, 16<<10))
		if got := errors.Is(err, ErrCorrupt); got != want {
			t.Errorf("chunk %d: read error %v, want damage reported: %v", i, err, want)
		}
	}
}

func TestUnverifiedReadsReturnDamage(t *testing.T) {
	needSegmentFiles(t, "damages segment files; the chunk data is in S3")
	// Without VerifyReads a flipped byte goes unnoticed (documents the cost
	// of turning verification off, and that the test damage is real).
	v := newEnv(t, Config{Chunking: policy(t, "fixed:16K")})
	data := testutil.RandBytes(rand.New(rand.NewPCG(43, 44)), 16<<10)
	v.write(1, 0, data)
	for _, c := range v.allChunks() {
		v.flipByte(c, 5)
	}
	v.reopen()
	got := v.read(1, 0, len(data))
	if firstDiff(got, data) != 5 {
		t.Errorf("first difference at %d, want 5", firstDiff(got, data))
	}
}

func TestCorruptCompressedChunk(t *testing.T) {
	needSegmentFiles(t, "damages segment files; the chunk data is in S3")
	// Damage to compressed bytes fails decompression or the hash check.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:16K"), Compression: "zstd", VerifyReads: true})
	data := textBytes(rand.New(rand.NewPCG(45, 46)), 16<<10)
	v.write(1, 0, data)
	for _, c := range v.allChunks() {
		if c.Comp != schema.CompZstd {
			t.Fatalf("text chunk not compressed")
		}
		v.flipByte(c, int64(c.Stored)/2)
	}
	v.reopen()
	if err := v.e.ReadAt(1, 0, make([]byte, len(data))); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadAt: err = %v, want ErrCorrupt", err)
	}
}

func TestTruncatedSegment(t *testing.T) {
	needSegmentFiles(t, "damages segment files; the chunk data is in S3")
	// A segment shorter than a chunk needs (lost tail after a crash) is an
	// error wrapping ErrCorrupt, never zeros.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:16K")})
	data := testutil.RandBytes(rand.New(rand.NewPCG(47, 48)), 32<<10)
	v.write(1, 0, data)
	if err := v.e.Sync(); err != nil {
		t.Fatal(err)
	}
	var last schema.Chunk
	for _, c := range v.allChunks() {
		if c.Offset >= last.Offset {
			last = c
		}
	}
	if err := os.Truncate(v.segmentPath(last), int64(last.Offset)+100); err != nil {
		t.Fatal(err)
	}
	v.reopen()
	if err := v.e.ReadAt(1, 0, make([]byte, len(data))); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadAt: err = %v, want ErrCorrupt", err)
	}
}

func TestSeekDataHole(t *testing.T) {
	// Layout with fixed 4K chunks: data [4K,12K), hole [12K,20K) (zeros
	// written), data [20K,24K), hole [24K,40K), data [40K,41K) then end.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K")})
	r := rand.New(rand.NewPCG(49, 50))
	v.write(1, 4096, testutil.RandBytes(r, 8192))
	v.write(1, 12288, make([]byte, 8192))
	v.write(1, 20480, testutil.RandBytes(r, 4096))
	v.write(1, 40960, testutil.RandBytes(r, 1024))
	const K = 1024
	tests := []struct {
		off, data, hole int64
	}{
		{0, 4 * K, 0},
		{4*K - 1, 4 * K, 4*K - 1},
		{4 * K, 4 * K, 12 * K},
		{6 * K, 6 * K, 12 * K},
		{12*K - 1, 12*K - 1, 12 * K},
		{12 * K, 20 * K, 12 * K},
		{20 * K, 20 * K, 24 * K},
		{30 * K, 40 * K, 30 * K},
		{40*K + 500, 40*K + 500, 41 * K},
		{41 * K, -1, 41 * K},
		{1 << 40, -1, 1 << 40},
	}
	// Both through the store and through a transaction's batch.
	readers := map[string]func() (meta.Reader, func()){
		"store": func() (meta.Reader, func()) { return v.meta, func() {} },
		"batch": func() (meta.Reader, func()) { b := v.meta.NewBatch(); return b, func() { b.Close() } },
	}
	for name, open := range readers {
		rd, done := open()
		for _, tc := range tests {
			if d, err := v.e.SeekData(rd, 1, tc.off); err != nil || d != tc.data {
				t.Errorf("%s: SeekData(%d) = %d, %v; want %d", name, tc.off, d, err, tc.data)
			}
			if h, err := v.e.SeekHole(rd, 1, tc.off); err != nil || h != tc.hole {
				t.Errorf("%s: SeekHole(%d) = %d, %v; want %d", name, tc.off, h, err, tc.hole)
			}
		}
		done()
	}
	// Adjacent extents from different writes form one data region.
	v.write(1, 8192, testutil.RandBytes(r, 4096*3))
	if h, _ := v.e.SeekHole(v.meta, 1, 4096); h != 24*K {
		t.Errorf("SeekHole over adjacent extents = %d, want %d", h, 24*K)
	}
	// A transaction sees its own uncommitted punch.
	tx := v.begin()
	if _, err := tx.Punch(1, 0, 16*K); err != nil {
		t.Fatal(err)
	}
	if d, _ := v.e.SeekData(tx.Batch(), 1, 0); d != 16*K {
		t.Errorf("SeekData in tx after punch = %d, want %d", d, 16*K)
	}
	if d, _ := v.e.SeekData(v.meta, 1, 0); d != 4*K {
		t.Errorf("SeekData outside the tx = %d, want %d", d, 4*K)
	}
	tx.Abort()
}

func TestExtentsClipped(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K")})
	v.write(1, 0, testutil.RandBytes(rand.New(rand.NewPCG(51, 52)), 16384))
	ps, err := Extents(v.meta, 1, 1000, 9000)
	if err != nil {
		t.Fatal(err)
	}
	var covered int64
	for i, p := range ps {
		if p.Off < 1000 || p.End() > 9000 {
			t.Errorf("piece %d [%d,%d) outside [1000,9000)", i, p.Off, p.End())
		}
		if i > 0 && ps[i-1].End() != p.Off {
			t.Errorf("pieces %d and %d not contiguous", i-1, i)
		}
		covered += int64(p.Length)
	}
	if covered != 8000 || len(ps) != 3 || ps[0].ChunkOff != 1000 {
		t.Errorf("Extents(1000, 9000) = %+v", ps)
	}
	if ps, _ := Extents(v.meta, 1, 5000, 5000); len(ps) != 0 {
		t.Errorf("empty range gave %d pieces", len(ps))
	}
}

func TestReclaim(t *testing.T) {
	v := newEnv(t, Config{Chunking: chunker.DefaultPolicy()})
	r := rand.New(rand.NewPCG(53, 54))
	data := testutil.RandBytes(r, 4<<20)
	v.write(1, 0, data)
	v.write(2, 0, data[:1<<20]) // shares chunks with inode 1
	if err := v.e.Sync(); err != nil {
		t.Fatal(err)
	}
	stored := v.e.Stats().PhysicalBytes
	if u := v.usage(); u < stored {
		t.Fatalf("blob usage %d below stored bytes %d", u, stored)
	}

	// Dropping inode 1 frees only the chunks inode 2 does not share.
	v.do(func(tx *Tx) error { return tx.DropAll(1) })
	stillLive := v.e.Stats().PhysicalBytes
	if stillLive <= 0 || stillLive >= stored {
		t.Fatalf("after dropping inode 1: %d of %d bytes live", stillLive, stored)
	}
	waitFor(t, "the reclaimer to free inode 1's chunks", func() bool {
		return v.e.ReclaimedBytes() >= stored-stillLive
	})
	if got := v.e.ReclaimedBytes(); got != stored-stillLive {
		t.Errorf("ReclaimedBytes = %d, want %d", got, stored-stillLive)
	}
	v.checkContent(2, data[:1<<20])

	v.do(func(tx *Tx) error { return tx.DropAll(2) })
	waitFor(t, "the reclaimer to free everything", func() bool {
		return v.e.ReclaimedBytes() >= stored
	})
	// Freed chunks are punched out: the store gives its space back.
	waitFor(t, "blob usage to drop", func() bool { return v.usage() <= 64<<10 })
	if st := v.e.Stats(); st != (schema.Stats{}) {
		t.Errorf("stats with nothing referenced: %+v", st)
	}
	v.checkInvariants()
}

func TestReclaimWaitsForDurability(t *testing.T) {
	// A chunk is punched only after a metadata Sync; with the reclaimer's
	// interval not yet passed, the bytes are still there.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K")})
	data := testutil.RandBytes(rand.New(rand.NewPCG(55, 56)), 256<<10)
	v.write(1, 0, data)
	before := v.usage()
	v.do(func(tx *Tx) error { return tx.DropAll(1) })
	// Racy by nature, so only checked when the reclaimer clearly has not run.
	if v.e.ReclaimedBytes() == 0 {
		if u := v.usage(); u < before {
			t.Errorf("usage dropped from %d to %d before the reclaimer ran", before, u)
		}
	}
	if err := v.e.Close(); err != nil { // reclaims what is pending
		t.Fatal(err)
	}
	if got := v.e.ReclaimedBytes(); got != int64(len(data)) {
		t.Errorf("after Close ReclaimedBytes = %d, want %d", got, len(data))
	}
	v.e = v.newEngine()
}

func TestOverlappingExtentsAreDamageNotAPanic(t *testing.T) {
	// An extent key damaged into starting inside the extent before it.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:16K"), VerifyReads: true})
	data := testutil.RandBytes(rand.New(rand.NewPCG(61, 62)), 64<<10)
	v.write(1, 0, data)
	second := v.allExtents()[1]
	b := v.meta.NewBatch()
	if err := b.Delete(schema.ExtentKey(1, second.off)); err != nil {
		t.Fatal(err)
	}
	if err := b.Set(schema.ExtentKey(1, second.off-300), second.Extent.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	b.Close()
	var re *RecordError
	if err := v.e.ReadAt(1, 0, make([]byte, len(data))); !errors.As(err, &re) || re.Ino != 1 {
		t.Fatalf("ReadAt over overlapping extents: err = %v, want a RecordError for inode 1", err)
	}
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
