package content

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/chunker"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// newOwnedEnv is an engine that writes new blocks of its fixed 4 KiB
// chunks owned, with the reclaimer run by the test.
func newOwnedEnv(t *testing.T) *env {
	needSegmentFiles(t, "owned blocks stay where they were written")
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), VerifyReads: true, OwnedBlocks: true, ReclaimInterval: time.Hour})
	if !v.e.owned {
		t.Fatal("the engine does not write owned blocks")
	}
	return v
}

// checkNoData fails the test unless the volume stores nothing: no chunk
// record, no owned block, no byte counted.
func (v *env) checkNoData() {
	v.t.Helper()
	if n := len(v.allChunks()); n != 0 {
		v.t.Errorf("%d chunk records with no data", n)
	}
	if st := v.e.Stats(); st.PhysicalBytes != 0 || st.RawBytes != 0 || st.Chunks != 0 || st.OwnedBlocks != 0 {
		v.t.Errorf("stats with no data: %+v", st)
	}
}

// ownedExtents counts the owned extents of the volume.
func (v *env) ownedExtents() int {
	n := 0
	for _, x := range v.allExtents() {
		if x.Owned {
			n++
		}
	}
	return n
}

func TestOwnedBlocksHaveNoRecords(t *testing.T) {
	v := newOwnedEnv(t)
	r := rand.New(rand.NewPCG(1, 2))
	data := testutil.RandBytes(r, 16*4096)
	v.write(2, 0, data)
	if n, c := v.ownedExtents(), len(v.allChunks()); n != 16 || c != 0 {
		t.Fatalf("16 new blocks: %d owned extents, %d chunk records; want 16 and 0", n, c)
	}
	v.checkContent(2, data)
	v.checkInvariants()
	st := v.e.Stats()
	if st.PhysicalBytes != 16*4096 || st.Chunks != 0 {
		t.Errorf("stats %+v: want 64 KiB stored in no chunk record", st)
	}

	// An overwrite drops the old blocks without a record to read; they
	// are freed once the drop is durable.
	before := v.usage()
	over := testutil.RandBytes(r, 8*4096)
	v.write(2, 4*4096, over)
	copy(data[4*4096:], over)
	v.checkContent(2, data)
	v.checkInvariants()
	if n := v.freeRecords(); n != 8 {
		t.Errorf("%d free records after 8 owned blocks were overwritten; want 8", n)
	}
	v.e.reclaimer.reclaim(true)
	if after := v.usage(); after > before {
		t.Errorf("the blob store grew from %d to %d bytes for an overwrite whose old blocks were freed", before, after)
	}

	// A new engine reads them as well (cold caches, extents only).
	v.reopen()
	v.checkContent(2, data)
}

func TestOwnedBlockCopiedGetsRecordAtItsPlace(t *testing.T) {
	v := newOwnedEnv(t)
	r := rand.New(rand.NewPCG(3, 4))
	data := testutil.RandBytes(r, 4*4096)
	v.write(2, 0, data)
	owner := v.allExtents()[1]
	v.do(func(tx *Tx) error { _, err := tx.Copy(2, 4096, 3, 0, 4096); return err })
	v.checkInvariants()
	c, ok := v.allChunks()[owner.Hash]
	if !ok || c.Segment != owner.Hint.Segment || c.Offset != owner.Hint.Offset || c.Refs != 2 {
		t.Fatalf("after a copy of an owned block: record %+v (found %v); want one at its place with 2 references", c, ok)
	}
	// The owner still says it owns the block: it counts in the record.
	v.do(func(tx *Tx) error { return tx.DropAll(2) })
	v.checkInvariants()
	v.checkContent(3, data[4096:2*4096])
	if c := v.allChunks()[owner.Hash]; c.Refs != 1 {
		t.Fatalf("after the owner went: %d references; want 1", c.Refs)
	}
	v.do(func(tx *Tx) error { return tx.DropAll(3) })
	v.checkInvariants()
	v.checkNoData()
}

func TestOwnedBlockPartlyPunched(t *testing.T) {
	// A punch inside a block leaves two parts of it: ordinary references,
	// so the block gets a record, and dropping both frees it.
	v := newOwnedEnv(t)
	r := rand.New(rand.NewPCG(5, 6))
	data := testutil.RandBytes(r, 4096)
	v.write(2, 0, data)
	v.do(func(tx *Tx) error { _, err := tx.Punch(2, 1000, 2000); return err })
	clear(data[1000:2000])
	v.checkContent(2, data)
	v.checkInvariants()
	if c := v.allChunks(); len(c) != 1 {
		t.Fatalf("%d chunk records after a punch split an owned block; want 1", len(c))
	}
	v.do(func(tx *Tx) error { _, err := tx.Punch(2, 0, 4096); return err })
	v.checkInvariants()
	v.checkNoData()
}

func TestOwnedBlockSameBytesTwiceInOneWrite(t *testing.T) {
	// Two blocks with the same bytes in one write: one is stored, owned by
	// the first extent, and the second references it, which gives it a
	// record with both references.
	v := newOwnedEnv(t)
	r := rand.New(rand.NewPCG(7, 8))
	block := testutil.RandBytes(r, 4096)
	data := append(append(bytes.Clone(block), testutil.RandBytes(r, 4096)...), block...)
	v.write(2, 0, data)
	v.checkContent(2, data)
	v.checkInvariants()
	h := schema.Sum(block)
	if c, ok := v.allChunks()[h]; !ok || c.Refs != 2 {
		t.Fatalf("repeated block: record %+v (found %v); want 2 references", c, ok)
	}
	v.e.reclaimer.reclaim(true)
	if u := v.usage(); u > 3*4096+64<<10 {
		t.Errorf("blob store holds %d bytes for 2 distinct blocks", u)
	}
}

func TestOwnedBlocksTally(t *testing.T) {
	v := newOwnedEnv(t)
	r := rand.New(rand.NewPCG(9, 10))
	v.write(2, 0, testutil.RandBytes(r, 4*4096))
	v.do(func(tx *Tx) error { _, err := tx.Copy(2, 0, 3, 0, 4096); return err })
	tally := NewRefTally()
	if _, err := tally.AddFile(v.meta, 2, true, false); err != nil {
		t.Fatal(err)
	}
	u, err := tally.Sum(v.meta)
	if err != nil {
		t.Fatal(err)
	}
	// Four blocks, one of them shared with the copy.
	want := ChunkUsage{Chunks: 4, RawBytes: 4 * 4096, PhysicalBytes: 4 * 4096, ExclusiveChunks: 3, ExclusiveBytes: 3 * 4096}
	if u != want {
		t.Errorf("tally of a file of owned blocks, one copied: %+v; want %+v", u, want)
	}
}

func TestOwnedBlockDamageIsReported(t *testing.T) {
	v := newOwnedEnv(t)
	r := rand.New(rand.NewPCG(11, 12))
	v.write(2, 0, testutil.RandBytes(r, 4096))
	x := v.allExtents()[0]
	v.flipByte(schema.Chunk{Segment: x.Hint.Segment, Offset: x.Hint.Offset, Stored: x.Length, Raw: x.Length}, 100)
	v.reopen()
	err := v.e.ReadAt(2, 0, make([]byte, 4096))
	var ce *ChunkError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || ce.Loc.Segment != x.Hint.Segment || ce.Loc.Offset != x.Hint.Offset {
		t.Fatalf("read of a damaged owned block: %v; want damage reported at its place", err)
	}
}

func TestDedupOwnedSharesEqualBlocks(t *testing.T) {
	v := newOwnedEnv(t)
	r := rand.New(rand.NewPCG(13, 14))
	a, b, c := testutil.RandBytes(r, 4096), testutil.RandBytes(r, 4096), testutil.RandBytes(r, 4096)
	v.write(2, 0, slices.Concat(a, b, c))
	v.write(3, 0, slices.Concat(b, a)) // owned copies of the same bytes: no dedup lookup finds owned blocks
	// c once more, in a file not cut in disk blocks: a chunk record.
	other, err := chunker.New(policy(t, "fixed:8K"))
	if err != nil {
		t.Fatal(err)
	}
	ps, _, err := v.e.PrepareWith(other, 0, c, true)
	if err != nil {
		t.Fatal(err)
	}
	v.do(func(tx *Tx) error { _, err := tx.WriteChunks(4, ps); return err })
	v.checkInvariants()
	if st := v.e.Stats(); st.OwnedBlocks != 5 || st.Chunks != 1 {
		t.Fatalf("before the pass: %+v; want 5 owned blocks and 1 chunk", st)
	}
	// The count of blocks a pass has not seen outlives the engine.
	v.reopen()
	if err := v.e.loadUnshared(); err != nil || v.e.ownedDedup.fresh.Load() != 5 {
		t.Fatalf("unshared owned blocks after a reopen: %d, %v; want 5", v.e.ownedDedup.fresh.Load(), err)
	}

	defer func(n int64) { ownedDedupShare = n }(ownedDedupShare)
	ownedDedupShare = 2 // three walks, each over a third of the hashes
	res, err := v.e.DedupOwned(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Owned != 5 || res.Shared != 3 || res.Skipped != 0 {
		t.Errorf("pass: %+v; want 5 owned extents found, 3 made references", res)
	}
	v.checkInvariants()
	v.checkContent(2, slices.Concat(a, b, c))
	v.checkContent(3, slices.Concat(b, a))
	v.checkContent(4, c)
	st := v.e.Stats()
	if st.OwnedBlocks != 0 || st.Chunks != 3 || st.PhysicalBytes != 3*4096 {
		t.Errorf("after the pass: %+v; want 3 chunks of 4 KiB, no owned block", st)
	}
	if n, err := v.meta.Get(schema.KeyOwnedUnshared); err != nil || string(n) != string(schema.U64(0)) {
		t.Errorf("owned_unshared after a pass: %x, %v; want 0", n, err)
	}
	if res, err := v.e.DedupOwned(context.Background()); err != nil || res.Shared != 0 {
		t.Errorf("a second pass: %+v, %v; want nothing to share", res, err)
	}
	v.e.reclaimer.reclaim(true)
	if u := v.usage(); u > 3*4096+64<<10 {
		t.Errorf("blob store holds %d bytes for 3 distinct blocks", u)
	}
}

func TestDedupOwnedLeavesChangedExtents(t *testing.T) {
	// An extent that changed between the walk and the pass's transaction
	// is left alone.
	v := newOwnedEnv(t)
	r := rand.New(rand.NewPCG(15, 16))
	a := testutil.RandBytes(r, 4096)
	v.write(2, 0, a)
	v.write(3, 0, a)
	all, err := v.e.ownedExtents(context.Background().Err, 0, 256)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := v.e.dedupGroups(all)
	if err != nil || len(groups) != 1 {
		t.Fatalf("groups %v, %v; want one", groups, err)
	}
	fresh := testutil.RandBytes(r, 4096)
	v.write(3, 0, fresh) // the second copy is overwritten meanwhile
	shared, skipped, err := v.e.shareOwned(groups)
	if err != nil || shared != 0 || skipped != 1 {
		t.Fatalf("shareOwned after a change: shared %d, skipped %d, %v; want 0 and 1", shared, skipped, err)
	}
	v.checkInvariants()
	v.checkContent(2, a)
	v.checkContent(3, fresh)
}

func TestOwnedDedupDue(t *testing.T) {
	var l ownedDedupLoop
	l.noteOwned(ownedDedupAfter, ownedDedupAfter)
	now := time.Now()
	var noReads time.Time
	if l.due(now, noReads, 0) {
		t.Error("due while writes go on")
	}
	if !l.due(now.Add(ownedDedupQuiet), noReads, 0) {
		t.Error("not due once writes paused")
	}
	if l.due(now.Add(ownedDedupQuiet), noReads, 16*ownedDedupAfter) {
		t.Error("due after an eighth of the owned blocks were new")
	}
	if l.due(now.Add(ownedDedupQuiet), now.Add(ownedDedupQuiet-time.Second), 0) {
		t.Error("due while reads go on")
	}
	if !l.due(now.Add(2*ownedDedupQuiet), now.Add(ownedDedupQuiet-time.Second), 0) {
		t.Error("not due once reads paused too")
	}
	if !l.due(now.Add(ownedDedupReadPatience), now.Add(ownedDedupReadPatience), 0) {
		t.Error("reads that never pause held the pass back longer than ownedDedupReadPatience")
	}
	l.noteOwned(ownedDedupBusy, ownedDedupAfter+ownedDedupBusy)
	if !l.due(now, now, 0) {
		t.Error("not due after many new blocks, writes and reads going on")
	}
	// A copy over a volume's owned blocks, twice: no pass under it.
	owned := int64(ownedDedupBusy)
	l.noteOwned(2*owned, 2*owned)
	if l.due(now, now, owned) {
		t.Error("due under writes after twice the owned blocks were new")
	}
	l.noteOwned(ownedDedupBusyShare*owned, ownedDedupBusyShare*owned)
	if !l.due(now, now, owned) {
		t.Errorf("not due under writes after %d times the owned blocks were new", ownedDedupBusyShare)
	}
}

func TestOwnedDedupSeesReads(t *testing.T) {
	var w readWatch
	t0 := time.Now()
	if last := w.note(t0, 0); !last.IsZero() {
		t.Fatalf("no read served, yet the last read is %v", last)
	}
	t1 := t0.Add(time.Second)
	if last := w.note(t1, 3); !last.Equal(t1) {
		t.Fatalf("reads served before the tick at %v, last read noted %v", t1, last)
	}
	if last := w.note(t1.Add(time.Second), 3); !last.Equal(t1) {
		t.Fatalf("no read since %v, last read noted %v", t1, last)
	}
}

func TestOwnedBlocksSameBytesCopiedInOneTx(t *testing.T) {
	// Two owned copies of the same bytes, both copied (and one of the
	// copies cut) in one transaction: the references made count in one
	// record, at one of the two places, and the other block stays owned
	// or goes with its owner.
	v := newOwnedEnv(t)
	r := rand.New(rand.NewPCG(17, 18))
	a := testutil.RandBytes(r, 4096)
	v.write(2, 0, a)
	v.write(3, 0, a)
	if n := v.ownedExtents(); n != 2 {
		t.Fatalf("%d owned extents; want 2", n)
	}
	v.do(func(tx *Tx) error {
		if _, err := tx.Copy(2, 0, 4, 0, 4096); err != nil {
			return err
		}
		if _, err := tx.Copy(3, 0, 5, 0, 4096); err != nil {
			return err
		}
		if _, err := tx.Punch(5, 1000, 3000); err != nil {
			return err
		}
		return tx.DropAll(2)
	})
	v.checkInvariants()
	cut := bytes.Clone(a)
	clear(cut[1000:3000])
	v.checkContent(3, a)
	v.checkContent(4, a)
	v.checkContent(5, cut)
	for _, ino := range []uint64{3, 4, 5} {
		v.do(func(tx *Tx) error { return tx.DropAll(ino) })
		v.checkInvariants()
	}
	v.checkNoData()
}

func TestDedupOwnedPassYields(t *testing.T) {
	// A pass started in a pause stops at the next read or write and
	// leaves the count of new blocks for the next pass; one that may not
	// yield runs to its end.
	v := newOwnedEnv(t)
	r := rand.New(rand.NewPCG(17, 18))
	a := testutil.RandBytes(r, 4096)
	v.write(2, 0, a)
	v.write(3, 0, a)
	l := &v.e.ownedDedup
	ctx := context.Background()

	stop := l.passStop(ctx, true)
	if err := stop(); err != nil {
		t.Fatalf("nothing happened since the pass began, yet: %v", err)
	}
	l.reads.Add(1) // a read served meanwhile
	res, err := v.e.dedupOwned(stop)
	if !errors.Is(err, errPassYielded) || res.Shared != 0 {
		t.Fatalf("pass after a read: %+v, %v; want it to yield before sharing", res, err)
	}
	if n := l.fresh.Load(); n != 2 {
		t.Errorf("new owned blocks after a pass yielded: %d; want 2, for the next pass", n)
	}

	stop = l.passStop(ctx, true)
	v.write(4, 0, testutil.RandBytes(r, 4096))
	if err := stop(); !errors.Is(err, errPassYielded) {
		t.Errorf("an owned block written since the pass began: %v; want it to yield", err)
	}

	stop = l.passStop(ctx, false)
	l.reads.Add(1)
	v.write(5, 0, testutil.RandBytes(r, 4096))
	res, err = v.e.dedupOwned(stop)
	if err != nil || res.Shared != 1 {
		t.Fatalf("a pass that may not yield, reads and writes meanwhile: %+v, %v; want 1 shared", res, err)
	}
	if n := l.fresh.Load(); n != 0 {
		t.Errorf("new owned blocks after a whole pass: %d; want 0", n)
	}
	v.checkInvariants()
	v.checkContent(2, a)
	v.checkContent(3, a)
}
