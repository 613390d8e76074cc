package content

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

func (v *env) recover() Recovery {
	v.t.Helper()
	rec, err := v.e.Recover()
	if err != nil {
		v.t.Fatal(err)
	}
	return rec
}

// crash abandons the engine as a killed daemon would (no Close: pending
// frees stay unpunched, the session stays open) and reopens the stores.
// Everything committed reached the OS, as after kill -9.
func (v *env) crash() {
	v.t.Helper()
	v.e.stopOwnedDedup()     // the dedup passes of owned blocks die with a killed daemon
	v.e.stopDedupFilter()    // its goroutine dies with a killed daemon
	v.e.loads.running.Wait() // as does readahead, which must not use the closed stores
	v.e = nil
	v.blobs.Close()
	v.meta.Close()
	v.meta, v.blobs = v.stores.Open(v.t)
	v.e = v.newEngine()
}

// liveBytes is the Align-rounded size of every chunk record's data.
func (v *env) liveBytes() int64 {
	var n int64
	for _, c := range v.allChunks() {
		n += (int64(c.Stored) + blob.Align - 1) &^ (blob.Align - 1)
	}
	return n
}

func (v *env) freeRecords() int {
	v.t.Helper()
	return v.countKeys(schema.FreeRange())
}

// countKeys counts the metadata keys in [lower, upper).
func (v *env) countKeys(lower, upper []byte) int {
	v.t.Helper()
	it, err := v.meta.NewIter(lower, upper)
	if err != nil {
		v.t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n
}

func TestRecoverReclaimsWhatACrashLeft(t *testing.T) {
	needSegmentFiles(t, "measures freed space by the blob store's Usage; an S3 pack keeps a freed chunk's bytes (a dead span) until the whole pack is dead or a compaction pass rewrites it, which the test does not run")
	v := newEnv(t, Config{Chunking: policy(t, smallCDC), ReclaimInterval: time.Hour})
	if rec := v.recover(); rec.Unclean || rec.ReclaimedBytes != 0 {
		t.Fatalf("first open: %+v", rec)
	}
	r := rand.New(rand.NewPCG(1, 2))
	kept := testutil.RandBytes(r, 100000)
	v.write(1, 0, testutil.RandBytes(r, 200000))
	v.write(2, 0, kept)
	v.do(func(tx *Tx) error { return tx.DropAll(1) }) // frees, not yet punched
	if v.freeRecords() == 0 {
		t.Fatal("dropping the last references wrote no free records")
	}
	// Chunk data stored for a transaction that never commits.
	if _, _, err := v.e.Prepare(0, testutil.RandBytes(r, 150000), true); err != nil {
		t.Fatal(err)
	}
	if used, live := v.usage(), v.liveBytes(); used <= live {
		t.Fatalf("before the crash %d bytes are used and %d live; the test leaves nothing to reclaim", used, live)
	}

	v.crash()
	rec := v.recover()
	if !rec.Unclean || rec.FreedRecords == 0 || rec.OrphanSegments == 0 || rec.ReclaimedBytes == 0 {
		t.Fatalf("recovery after a crash: %+v", rec)
	}
	if used, live := v.usage(), v.liveBytes(); used != live {
		t.Errorf("after recovery the segments hold %d bytes, live chunks %d", used, live)
	}
	if n := v.freeRecords(); n != 0 {
		t.Errorf("%d free records left after recovery", n)
	}
	if got := v.read(2, 0, len(kept)); !bytes.Equal(got, kept) {
		t.Error("recovery damaged a live file")
	}
	v.checkInvariants()

	// A clean close leaves nothing to recover.
	v.reopen()
	if rec := v.recover(); rec.Unclean || rec.ReclaimedBytes != 0 {
		t.Fatalf("after a clean close: %+v", rec)
	}
}

func TestReclaimerDropsFreeRecords(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, smallCDC), ReclaimInterval: 10 * time.Millisecond})
	v.recover()
	r := rand.New(rand.NewPCG(3, 4))
	v.write(1, 0, testutil.RandBytes(r, 100000))
	v.do(func(tx *Tx) error { return tx.DropAll(1) })
	waitFor(t, "free records to be punched and dropped", func() bool { return v.freeRecords() == 0 })
	if used := v.usage(); used != 0 {
		t.Errorf("%d bytes still used after freeing everything", used)
	}
}
