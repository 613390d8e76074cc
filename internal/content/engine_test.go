package content

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/chunker"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
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
