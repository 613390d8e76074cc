package content

import (
	"errors"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// newSlotEnv is an engine on segment files with fixed 4 KiB chunks whose
// reclaimer runs only when a test calls it.
func newSlotEnv(t *testing.T) *env { return newSlotEnvOwned(t, false) }

// newSlotEnvOwned is newSlotEnv, writing new blocks owned if owned
// (owned.go).
func newSlotEnvOwned(t *testing.T, owned bool) *env { return newSlotEnvWith(t, owned, false) }

// newSlotEnvWith is newSlotEnvOwned, overwriting owned blocks in place
// if inPlace (inplace.go).
func newSlotEnvWith(t *testing.T, owned, inPlace bool) *env {
	needSegmentFiles(t, "only segment files reuse freed blocks")
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), ReclaimInterval: time.Hour, VerifyReads: owned, OwnedBlocks: owned, InPlace: inPlace})
	if v.e.slots == nil {
		t.Fatalf("the segment store %T does not reuse freed blocks", v.blobs)
	}
	return v
}

func (v *env) chunkLoc(data []byte) blob.Loc {
	v.t.Helper()
	c, _, err := v.e.chunkRecord(schema.Sum(data))
	if err != nil {
		v.t.Fatal(err)
	}
	return blob.Loc{Segment: c.Segment, Offset: c.Offset, Length: c.Stored}
}

// storeIntoFreedBlock writes a block to inode 2, drops it, runs a reclaim
// pass (the block is pooled) and prepares a new block, which the store
// writes into the freed one: it returns that block's place, the new data
// and its prepared chunks, not committed.
func (v *env) storeIntoFreedBlock(seed uint64) (blob.Loc, []byte, []*Prepared) {
	v.t.Helper()
	r := rand.New(rand.NewPCG(seed, seed))
	old := testutil.RandBytes(r, 4096)
	v.write(2, 0, old)
	l := v.chunkLoc(old)
	v.do(func(tx *Tx) error { return tx.DropAll(2) })
	v.e.reclaimer.reclaim(false)
	fresh := testutil.RandBytes(r, 4096)
	ps, _, err := v.e.Prepare(0, fresh, true)
	if err != nil {
		v.t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].loc.Segment != l.Segment || ps[0].loc.Offset != l.Offset {
		v.t.Fatalf("the new chunk went to %+v, not into the freed block %+v", ps[0].loc, l)
	}
	return l, fresh, ps
}

// blockLocs returns where the chunks of data's 4 KiB blocks are stored.
func (v *env) blockLocs(data []byte) []blob.Loc {
	v.t.Helper()
	var locs []blob.Loc
	for off := 0; off < len(data); off += 4096 {
		locs = append(locs, v.chunkLoc(data[off:off+4096]))
	}
	return locs
}

func (v *env) hasFreeRecord(l blob.Loc) bool {
	v.t.Helper()
	_, err := v.meta.Get(schema.FreeKey(l.Segment, l.Offset))
	if err != nil && !errors.Is(err, meta.ErrNotFound) {
		v.t.Fatal(err)
	}
	return err == nil
}

// TestFreedBlocksTakeNewBlocks: blocks freed by an overwrite, once their
// drop is durable, take the next new one-block chunks; the commit naming
// those deletes their free records, and the blocks nobody took are punched
// later (here by the last pass, which punches them all).
func TestFreedBlocksTakeNewBlocks(t *testing.T) {
	v := newSlotEnv(t)
	r := rand.New(rand.NewPCG(31, 31))
	old := testutil.RandBytes(r, 8*4096)
	v.write(2, 0, old)
	freed := v.blockLocs(old[:4*4096])
	over := testutil.RandBytes(r, 4*4096)
	v.write(2, 0, over) // drops the first four chunks
	for _, l := range freed {
		if !v.hasFreeRecord(l) {
			t.Fatalf("no free record for dropped chunk at %+v", l)
		}
	}
	v.e.reclaimer.reclaim(false) // durable; the four blocks are pooled

	fresh := testutil.RandBytes(r, 2*4096)
	v.write(3, 0, fresh)
	taken := map[blob.Loc]bool{}
	for i := range 2 {
		l := v.chunkLoc(fresh[i*4096 : (i+1)*4096])
		taken[l] = true
		if v.hasFreeRecord(l) {
			t.Errorf("the chunk at %+v is live and its block keeps a free record", l)
		}
	}
	var left []blob.Loc
	for _, l := range freed {
		if !taken[l] {
			left = append(left, l)
		}
	}
	if len(left) != 2 {
		t.Fatalf("new chunks at %v, freed blocks %v: want two of them taken", taken, freed)
	}
	for _, l := range left {
		if !v.hasFreeRecord(l) {
			t.Errorf("pooled block %+v lost its free record before it was punched", l)
		}
	}
	v.e.reclaimer.reclaim(false) // too soon: the blocks stay pooled
	for _, l := range left {
		if !v.hasFreeRecord(l) {
			t.Errorf("pooled block %+v was punched before its time", l)
		}
	}
	v.e.reclaimer.reclaim(true) // the blocks nobody took are punched
	for _, l := range left {
		if v.hasFreeRecord(l) {
			t.Errorf("pooled block %+v kept its free record after the last pass", l)
		}
		if got, err := v.blobs.Read(l, make([]byte, l.Length)); err != nil || !allZero(got) {
			t.Errorf("expired block %+v was not punched: %v", l, err)
		}
	}
	v.checkContent(2, append(append([]byte{}, over...), old[4*4096:]...))
	v.checkContent(3, fresh)
	v.reopen()
	v.checkContent(3, fresh)
}

// TestBlockWrittenButNotCommittedIsPunched: a crash after a new chunk was
// written into a freed block but before its commit leaves the block's free
// record, and recovery punches the block.
func TestBlockWrittenButNotCommittedIsPunched(t *testing.T) {
	v := newSlotEnv(t)
	l, _, _ := v.storeIntoFreedBlock(32)
	v.crash()
	if !v.hasFreeRecord(l) {
		t.Fatal("the freed block's free record is gone though nothing committed a chunk there")
	}
	if _, err := v.e.Recover(); err != nil {
		t.Fatal(err)
	}
	if v.hasFreeRecord(l) {
		t.Error("recovery left the free record")
	}
	// Punched, or its segment deleted as empty.
	if got, err := v.blobs.Read(l, make([]byte, 4096)); !errors.Is(err, os.ErrNotExist) && (err != nil || !allZero(got)) {
		t.Errorf("recovery did not punch the block written without a commit: %v", err)
	}
}

// TestUncommittedBlockGoesBackToThePool: a chunk written into a freed
// block and then not committed (another copy of it won) returns the block
// to the pool with its free record, instead of punching it.
func TestUncommittedBlockGoesBackToThePool(t *testing.T) {
	v := newSlotEnv(t)
	l, fresh, ps := v.storeIntoFreedBlock(33)
	v.e.Discard(ps)
	if !v.hasFreeRecord(l) {
		t.Fatal("the block's free record went with a chunk that was never committed")
	}
	v.write(3, 0, fresh)
	if got := v.chunkLoc(fresh); got.Segment != l.Segment || got.Offset != l.Offset {
		t.Errorf("the chunk went to %+v, not into the block given back to the pool %+v", got, l)
	}
	if v.hasFreeRecord(l) {
		t.Error("the committed chunk's block keeps its free record")
	}
	v.checkContent(3, fresh)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// TestSlotReuseRandomized writes random blocks over three small files,
// some of them repeated (dedup hits), with reclaim passes, final passes and
// "crashes" (new stores and engine without the last pass, then Recover) in
// between, and checks after each step: every file reads as the model says,
// and no free record names the place of a live chunk (recovery would punch
// it). DOPPEL_SLOTS_SEED replays a run.
func TestSlotReuseRandomized(t *testing.T) {
	seed := uint64(testutil.EnvInt(t, "DOPPEL_SLOTS_SEED", int(rand.Uint32())))
	t.Logf("seed %d (DOPPEL_SLOTS_SEED=%d replays it)", seed, seed)
	t.Run("records", func(t *testing.T) { testSlotReuseRandomized(t, seed, false, false) })
	t.Run("owned", func(t *testing.T) { testSlotReuseRandomized(t, seed, true, false) })
	// Overwrites of owned blocks go in place; copies (below) keep some
	// blocks shared, whose overwrites take freed blocks.
	t.Run("inplace", func(t *testing.T) { testSlotReuseRandomized(t, seed, true, true) })
}

func testSlotReuseRandomized(t *testing.T, seed uint64, owned, inPlace bool) {
	r := rand.New(rand.NewPCG(seed, seed))
	v := newSlotEnvWith(t, owned, inPlace)
	const files, blocks = 3, 16
	model := make([][]byte, files)
	for i := range model {
		model[i] = testutil.RandBytes(r, blocks*4096)
		v.write(uint64(2+i), 0, model[i])
	}
	repeated := testutil.RandBytes(r, 4*4096) // blocks written again and again
	claims := &countClaims{SlotReuser: v.e.slots}
	v.e.slots = claims
	var overwritten int64 // blocks written in place, by the engines before the last
	for step := range 300 {
		switch n := r.IntN(20); {
		case n < 13:
			f, first, count := r.IntN(files), r.IntN(blocks), 1+r.IntN(4)
			count = min(count, blocks-first)
			data := testutil.RandBytes(r, count*4096)
			for b := range count {
				if r.IntN(4) == 0 {
					k := r.IntN(4)
					copy(data[b*4096:], repeated[k*4096:(k+1)*4096])
				}
			}
			v.write(uint64(2+f), int64(first)*4096, data)
			copy(model[f][first*4096:], data)
		case n < 15:
			// A block copied to another file: shared from now on.
			from, to, b := r.IntN(files), r.IntN(files), r.IntN(blocks)
			if from != to {
				v.do(func(tx *Tx) error {
					_, err := tx.Copy(uint64(2+from), int64(b)*4096, uint64(2+to), int64(b)*4096, 4096)
					return err
				})
				copy(model[to][b*4096:(b+1)*4096], model[from][b*4096:])
			}
		case n < 17:
			v.e.reclaimer.reclaim(false)
		case n < 18:
			v.e.reclaimer.reclaim(true)
		default:
			overwritten += v.e.counters.overwritten.Load()
			v.crash()
			claims.SlotReuser = v.e.slots
			v.e.slots = claims
			if _, err := v.e.Recover(); err != nil {
				t.Fatalf("step %d: recover: %v", step, err)
			}
		}
		for f := range files {
			v.checkContent(uint64(2+f), model[f])
		}
		v.checkNoFreeRecordAtLiveChunk(step)
		v.checkInvariants()
	}
	if claims.n == 0 && !inPlace { // in place, few overwrites free a block
		t.Error("no new chunk was written into a freed block: the test tests nothing")
	}
	overwritten += v.e.counters.overwritten.Load()
	t.Logf("%d new chunks written into freed blocks, %d blocks written in place", claims.n, overwritten)
	if inPlace && v.e.inPlace && overwritten == 0 { // not where commits are durable (PostgreSQL)
		t.Error("no block was written in place: the variant tests nothing of it")
	}
	v.e.reclaimer.reclaim(true)
	lower, upper := schema.FreeRange()
	it, err := v.meta.NewIter(lower, upper)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if it.First() {
		t.Errorf("free records left after the last pass, the first %x", it.Key())
	}
}

// checkNoFreeRecordAtLiveChunk fails the test if a free record names the
// place of a chunk the chunk table holds.
func (v *env) checkNoFreeRecordAtLiveChunk(step int) {
	v.t.Helper()
	lower, upper := schema.ChunkRange()
	it, err := v.meta.NewIter(lower, upper)
	if err != nil {
		v.t.Fatal(err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		c, err := schema.DecodeChunk(it.Value())
		if err != nil {
			v.t.Fatal(err)
		}
		if c.IsInline() {
			continue
		}
		if v.hasFreeRecord(blob.Loc{Segment: c.Segment, Offset: c.Offset}) {
			v.t.Fatalf("step %d: a free record names segment %d offset %d, where a live chunk is", step, c.Segment, c.Offset)
		}
	}
	for _, x := range v.allExtents() {
		if x.Owned && v.hasFreeRecord(blob.Loc{Segment: x.Hint.Segment, Offset: x.Hint.Offset}) {
			v.t.Fatalf("step %d: a free record names segment %d offset %d, which inode %d's extent at %d owns",
				step, x.Hint.Segment, x.Hint.Offset, x.ino, x.off)
		}
	}
}

// countClaims counts the slots claimed.
type countClaims struct {
	blob.SlotReuser
	n int
}

func (c *countClaims) ClaimSlot(l blob.Loc) bool {
	ok := c.SlotReuser.ClaimSlot(l)
	if ok {
		c.n++
	}
	return ok
}

// overflowOnce is a SlotReuser whose first offer pools nothing (as a full
// pool does) and calls during before returning.
type overflowOnce struct {
	blob.SlotReuser
	during func()
}

func (o *overflowOnce) OfferSlots(freed []blob.Loc) []blob.Loc {
	if f := o.during; f != nil {
		o.during = nil
		f()
		return freed
	}
	return o.SlotReuser.OfferSlots(freed)
}

// TestLongPassPoolsWhatIsFreedMeanwhile: a pass whose punching outlasts
// the reclaimer's interval pools, between its batches, the blocks freed
// since it began, so that a writer's new blocks go into them instead of
// being appended while the punching goes on.
func TestLongPassPoolsWhatIsFreedMeanwhile(t *testing.T) {
	v := newSlotEnv(t)
	r := rand.New(rand.NewPCG(34, 34))
	v.write(2, 0, testutil.RandBytes(r, 4*4096))
	later := testutil.RandBytes(r, 2*4096)
	v.write(3, 0, later)
	freedLater := map[blob.Loc]bool{v.chunkLoc(later[:4096]): true, v.chunkLoc(later[4096:]): true}
	v.do(func(tx *Tx) error { return tx.DropAll(2) })
	v.e.slots = &overflowOnce{SlotReuser: v.e.slots, during: func() {
		v.do(func(tx *Tx) error { return tx.DropAll(3) }) // freed while the pass runs
	}}
	v.e.reclaimer.every = time.Nanosecond // any punching outlasts it
	v.e.reclaimer.reclaim(false)          // punches inode 2's blocks; pools inode 3's
	for l := range freedLater {
		if !v.hasFreeRecord(l) {
			t.Fatalf("block %+v, freed during the pass, was punched", l)
		}
	}
	fresh := testutil.RandBytes(r, 4096)
	v.write(4, 0, fresh)
	if l := v.chunkLoc(fresh); !freedLater[l] {
		t.Errorf("a new block went to %+v, not into a block freed during the pass (%v)", l, freedLater)
	}
	v.checkContent(4, fresh)
}

// TestLongPassLetsAHoldIn: between two batches of its punching, a pass
// lets a hold (an online check) in, punches nothing while it is held, and
// leaves the rest to a pass after the hold.
func TestLongPassLetsAHoldIn(t *testing.T) {
	v := newSlotEnv(t)
	r := rand.New(rand.NewPCG(35, 35))
	data := testutil.RandBytes(r, 3*4096)
	v.write(2, 0, data)
	locs := v.blockLocs(data)
	v.do(func(tx *Tx) error { return tx.DropAll(2) })
	defer func(n int) { punchBatch = n }(punchBatch)
	punchBatch = 1
	held := make(chan func())
	v.e.slots = &overflowOnce{SlotReuser: v.e.slots, during: func() {
		started := make(chan struct{})
		go func() {
			close(started)
			held <- v.e.HoldReclaim() // waits for the pass's first batch
		}()
		<-started
		time.Sleep(100 * time.Millisecond) // the hold is waiting by then
	}}
	v.e.reclaimer.reclaim(false)
	release := <-held
	left := 0
	for _, l := range locs {
		if v.hasFreeRecord(l) {
			left++
		}
	}
	if left == 0 || left == len(locs) {
		t.Fatalf("%d of %d freed blocks left unpunched; want the pass to stop after its first batch", left, len(locs))
	}
	v.e.reclaimer.reclaim(false) // held: does nothing
	for _, l := range locs {
		if v.hasFreeRecord(l) {
			left--
		}
	}
	if left != 0 {
		t.Fatalf("%d blocks punched while a hold was in", left)
	}
	release()
	v.e.reclaimer.reclaim(false)
	for _, l := range locs {
		if v.hasFreeRecord(l) {
			t.Errorf("block %+v still unpunched after the hold ended", l)
		}
	}
}

// TestReleasedBlocksAreNotPooled: blocks a transaction marked Release
// frees (TRIM, a punched hole, a deleted file) are punched at the next
// pass, not pooled for new blocks for slotLife, so their space is back at
// once; blocks an overwrite frees are pooled as before.
func TestReleasedBlocksAreNotPooled(t *testing.T) {
	v := newSlotEnv(t)
	r := rand.New(rand.NewPCG(36, 36))
	overwritten, released := testutil.RandBytes(r, 2*4096), testutil.RandBytes(r, 2*4096)
	v.write(2, 0, overwritten)
	v.write(3, 0, released)
	pooled, punched := v.blockLocs(overwritten), v.blockLocs(released)
	v.do(func(tx *Tx) error { return tx.DropAll(2) })
	v.do(func(tx *Tx) error {
		tx.Release()
		return tx.DropAll(3)
	})
	v.e.reclaimer.reclaim(false)
	for _, l := range punched {
		if v.hasFreeRecord(l) {
			t.Errorf("released block %+v was pooled, not punched", l)
		}
	}
	for _, l := range pooled {
		if !v.hasFreeRecord(l) {
			t.Errorf("block %+v, freed by an overwrite, was punched, not pooled", l)
		}
	}
	fresh := testutil.RandBytes(r, 4096)
	v.write(4, 0, fresh)
	if l := v.chunkLoc(fresh); l != pooled[0] && l != pooled[1] {
		t.Errorf("a new block went to %+v, not into a pooled block %v", l, pooled)
	}
	v.checkContent(4, fresh)
}
