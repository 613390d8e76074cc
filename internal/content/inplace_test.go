package content

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// newInPlaceEnv is an engine that writes disk images' blocks owned and
// overwrites them in place.
func newInPlaceEnv(t *testing.T) *env {
	t.Helper()
	needSegmentFiles(t, "blocks are written over in place only in segment files")
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), VerifyReads: true, OwnedBlocks: true, InPlace: true, ReclaimInterval: time.Hour})
	if !v.e.inPlace {
		// PostgreSQL makes every commit durable, which syncs each
		// commit's new bytes: that path writes no block in place.
		if _, durable := v.meta.(meta.CommitsDurable); durable {
			t.Skip("skipping: blocks are written in place only where commits are not durable one by one")
		}
		t.Fatal("the engine does not overwrite blocks in place")
	}
	return v
}

// ownedPlaces returns the place of every owned extent of ino by offset.
func (v *env) ownedPlaces(ino uint64) map[int64]blob.Loc {
	out := map[int64]blob.Loc{}
	for _, x := range v.allExtents() {
		if x.ino == ino && x.Owned {
			out[x.off] = blob.Loc{Segment: x.Hint.Segment, Offset: x.Hint.Offset, Length: x.Length}
		}
	}
	return out
}

// intentRecords counts the volume's intent records.
func (v *env) intentRecords() int {
	v.t.Helper()
	return v.countKeys(schema.IntentRange())
}

// TestInPlaceOverwrite: blocks written over owned blocks keep their
// places, the volume's space and counts do not change, nothing is freed,
// an intent record covers the zone until a Sync, and the file reads the
// new bytes (also from a new engine).
func TestInPlaceOverwrite(t *testing.T) {
	v := newInPlaceEnv(t)
	r := rand.New(rand.NewPCG(1, 2))
	data := testutil.RandBytes(r, 16*4096)
	v.write(2, 0, data)
	if err := v.e.Sync(); err != nil {
		t.Fatal(err)
	}
	places, before := v.ownedPlaces(2), v.e.Stats()
	if len(places) != 16 || v.intentRecords() != 0 {
		t.Fatalf("16 new blocks: %d owned, %d intent records; want 16 and none", len(places), v.intentRecords())
	}
	over := testutil.RandBytes(r, 8*4096)
	v.write(2, 4*4096, over)
	copy(data[4*4096:], over)
	if n := v.e.counters.overwritten.Load(); n != 8 {
		t.Errorf("%d blocks written in place, want 8", n)
	}
	if after := v.ownedPlaces(2); len(after) != 16 {
		t.Errorf("%d owned blocks after the overwrite, want 16", len(after))
	} else {
		for off, l := range places {
			if after[off] != l {
				t.Errorf("block at %d moved from %+v to %+v", off, l, after[off])
			}
		}
	}
	if st := v.e.Stats(); st != before {
		t.Errorf("stats changed from %+v to %+v", before, st)
	}
	if n := v.freeRecords(); n != 0 {
		t.Errorf("%d free records after writes in place", n)
	}
	if n := v.intentRecords(); n != 1 {
		t.Errorf("%d intent records before the Sync, want 1", n)
	}
	v.checkContent(2, data)
	v.checkInvariants()
	for i, want := range []int{1, 0} { // cleared lazily: kept across one Sync
		if err := v.e.Sync(); err != nil {
			t.Fatal(err)
		}
		if n := v.intentRecords(); n != want {
			t.Errorf("%d intent records after Sync %d, want %d", n, i+1, want)
		}
	}
	v.reopen()
	v.checkContent(2, data)
}

// TestIntentRecordsAheadAndLazy: a writer that comes into a zone from
// the one below gets the records of the zones ahead with its own, one
// that jumps does not; a Sync deletes only the records of zones not
// written since the Sync before it, and a clean close deletes them all.
func TestIntentRecordsAheadAndLazy(t *testing.T) {
	v := newInPlaceEnv(t)
	v.recover() // opens the session that a clean close ends
	zone := int64(schema.IntentZoneBytes)
	intend := func(ino uint64, off int64) {
		t.Helper()
		if err := v.e.intendOverwrite(ino, []int64{off}); err != nil {
			t.Fatal(err)
		}
	}
	want := func(n int, when string) {
		t.Helper()
		if got := v.intentRecords(); got != n {
			t.Errorf("%s: %d intent records, want %d", when, got, n)
		}
	}
	intend(2, 4096)
	want(1, "a first write")
	intend(2, zone+4096)
	want(2+intentReadAhead, "the writer went on into the next zone")
	intend(2, 3*zone) // recorded ahead already
	want(2+intentReadAhead, "a write into a zone recorded ahead")
	intend(3, 5*zone)
	want(3+intentReadAhead, "another file's write, not after its zone below")
	if err := v.e.Sync(); err != nil {
		t.Fatal(err)
	}
	want(3+intentReadAhead, "a Sync after the writes")
	intend(2, 4096)
	if err := v.e.Sync(); err != nil {
		t.Fatal(err)
	}
	want(1, "a second Sync, one zone written between the two")
	intend(3, 5*zone)
	if err := v.e.Close(); err != nil {
		t.Fatal(err)
	}
	v.e = nil
	want(0, "a clean close")
	v.e = v.newEngine()
}

// TestInPlaceNotOverShared: a block a copy shares (it has a record at its
// place) is not written over: the overwrite stores a new block and the
// copy keeps the old bytes.
func TestInPlaceNotOverShared(t *testing.T) {
	v := newInPlaceEnv(t)
	r := rand.New(rand.NewPCG(3, 4))
	data := testutil.RandBytes(r, 4*4096)
	v.write(2, 0, data)
	v.do(func(tx *Tx) error { _, err := tx.Copy(2, 4096, 3, 0, 4096); return err })
	over := testutil.RandBytes(r, 4*4096)
	v.write(2, 0, over)
	if n := v.e.counters.overwritten.Load(); n != 3 {
		t.Errorf("%d blocks written in place, want 3 (all but the shared one)", n)
	}
	v.checkContent(2, over)
	v.checkContent(3, data[4096:2*4096])
	v.checkInvariants()
}

// TestInPlaceCrashRetakesBytes: blocks written in place whose commit a
// crash lost (whole, or torn: half new) read as the bytes the disk kept
// after recovery, which finds them by the intent record; the same bytes
// without an intent record are damage.
func TestInPlaceCrashRetakesBytes(t *testing.T) {
	v := newInPlaceEnv(t)
	r := rand.New(rand.NewPCG(5, 6))
	data := testutil.RandBytes(r, 8*4096)
	v.write(2, 0, data)
	if err := v.e.Sync(); err != nil {
		t.Fatal(err)
	}
	places := v.ownedPlaces(2)
	// What a transaction does before its commit: the intent, the write.
	whole, torn := testutil.RandBytes(r, 4096), append(testutil.RandBytes(r, 2048), data[2*4096+2048:3*4096]...)
	if err := v.e.intendOverwrite(2, []int64{4096, 2 * 4096}); err != nil {
		t.Fatal(err)
	}
	if err := v.e.blobs.(blob.Overwriter).Overwrite([]blob.Loc{places[4096], places[2*4096]}, [][]byte{whole, torn}); err != nil {
		t.Fatal(err)
	}
	v.crash()
	rec, err := v.e.Recover()
	if err != nil {
		t.Fatal(err)
	}
	if rec.IntentZones != 1 || rec.RetakenBlocks != 2 {
		t.Errorf("recovery checked %d zones and took %d blocks as found; want 1 and 2", rec.IntentZones, rec.RetakenBlocks)
	}
	copy(data[4096:], whole)
	copy(data[2*4096:], torn)
	v.checkContent(2, data)
	v.checkInvariants()
	if n := v.intentRecords(); n != 0 {
		t.Errorf("%d intent records after recovery", n)
	}

	// Without the intent record, the same is damage, not a write.
	if err := v.e.blobs.(blob.Overwriter).Overwrite([]blob.Loc{places[3*4096]}, [][]byte{testutil.RandBytes(r, 4096)}); err != nil {
		t.Fatal(err)
	}
	if err := v.e.ReadAt(2, 3*4096, make([]byte, 4096)); err == nil {
		t.Error("a block changed behind the engine's back reads without error")
	}
}

// TestInPlaceAbortRetakes: a transaction that wrote blocks in place and
// then failed leaves their extents naming the bytes written (a failed
// write may have landed, as on a disk), never damage.
func TestInPlaceAbortRetakes(t *testing.T) {
	v := newInPlaceEnv(t)
	r := rand.New(rand.NewPCG(7, 8))
	data := testutil.RandBytes(r, 4*4096)
	v.write(2, 0, data)
	over := testutil.RandBytes(r, 2*4096)
	ps := v.prepare(2, 4096, over)
	tx := v.begin()
	if _, err := tx.WriteChunks(2, ps); err != nil {
		t.Fatal(err)
	}
	if len(tx.overwrote) != 2 {
		t.Fatalf("the transaction wrote %d blocks in place, want 2", len(tx.overwrote))
	}
	tx.Abort()
	copy(data[4096:], over)
	v.checkContent(2, data)
	v.checkInvariants()
}

// TestInPlaceReadsDuringOverwrites: readers running beside writers in
// place always read a block whole, old or new, and never report damage
// (a read that took an extent before its block was written over reads
// again).
func TestInPlaceReadsDuringOverwrites(t *testing.T) {
	v := newInPlaceEnv(t)
	const blocks = 64
	fill := func(b int, gen byte) []byte {
		p := bytes.Repeat([]byte{gen}, 4096)
		p[0], p[1] = byte(b), 0xAB // no two blocks alike: no dedup
		return p
	}
	for b := range blocks {
		v.write(2, int64(b)*4096, fill(b, 1))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 4096)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				b := i % blocks
				if err := v.e.ReadAt(2, int64(b)*4096, buf); err != nil {
					errs <- err
					return
				}
				if buf[0] != byte(b) || buf[1] != 0xAB || buf[4095] != buf[2] {
					errs <- &blockError{b}
					return
				}
			}
		}()
	}
	for gen := byte(2); gen < 40; gen++ {
		for b := range blocks {
			v.write(2, int64(b)*4096, fill(b, gen))
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if v.e.counters.overwritten.Load() == 0 {
		t.Error("no block written in place")
	}
}

type blockError struct{ b int }

func (e *blockError) Error() string { return "block read torn or misplaced" }

// TestInPlaceSameBytes: blocks written again with the bytes they hold
// take no write and no intent record, and change nothing.
func TestInPlaceSameBytes(t *testing.T) {
	v := newInPlaceEnv(t)
	data := testutil.RandBytes(rand.New(rand.NewPCG(9, 10)), 8*4096)
	v.write(2, 0, data)
	if err := v.e.Sync(); err != nil {
		t.Fatal(err)
	}
	places, before := v.ownedPlaces(2), v.e.Stats()
	v.write(2, 2*4096, data[2*4096:6*4096])
	if n, i := v.e.counters.overwritten.Load(), v.intentRecords(); n != 0 || i != 0 {
		t.Errorf("the same bytes again: %d blocks written, %d intent records; want none", n, i)
	}
	if after := v.ownedPlaces(2); len(after) != len(places) || after[2*4096] != places[2*4096] {
		t.Errorf("owned blocks %v, were %v", after, places)
	}
	if st := v.e.Stats(); st != before {
		t.Errorf("stats changed from %+v to %+v", before, st)
	}
	v.checkContent(2, data)
	v.checkInvariants()
}

// TestInPlaceTwiceInOneTransaction: a transaction that punches a block
// and then writes it (the long way: its owner extent is gone when the
// write comes) writes it in place; one that writes the same blocks twice
// writes the first in place, and the second, planned over bytes the
// first replaced, copy-on-write. Each leaves the last write's bytes and
// sound counts.
func TestInPlaceTwiceInOneTransaction(t *testing.T) {
	v := newInPlaceEnv(t)
	r := rand.New(rand.NewPCG(9, 10))
	data := testutil.RandBytes(r, 8*4096)
	v.write(2, 0, data)
	places := v.ownedPlaces(2)
	prepare := func(off int64, p []byte) []*Prepared { return v.prepare(2, off, p) }

	before := v.e.counters.overwritten.Load()
	over := testutil.RandBytes(r, 4096)
	ps := prepare(4096, over)
	v.do(func(tx *Tx) error {
		if _, err := tx.Punch(2, 4096, 2*4096); err != nil {
			return err
		}
		_, err := tx.WriteChunks(2, ps)
		return err
	})
	copy(data[4096:], over)
	if n := v.e.counters.overwritten.Load() - before; n != 1 {
		t.Errorf("punched and written again in one transaction: %d blocks written in place, want 1", n)
	}

	before = v.e.counters.overwritten.Load()
	first, second := testutil.RandBytes(r, 4*4096), testutil.RandBytes(r, 4*4096)
	ps1, ps2 := prepare(4*4096, first), prepare(4*4096, second)
	v.do(func(tx *Tx) error {
		if _, err := tx.WriteChunks(2, ps1); err != nil {
			return err
		}
		_, err := tx.WriteChunks(2, ps2)
		return err
	})
	copy(data[4*4096:], second)
	if n := v.e.counters.overwritten.Load() - before; n != 4 {
		t.Errorf("written twice in one transaction: %d blocks written in place, want 4", n)
	}
	for off, l := range v.ownedPlaces(2) {
		if off < 4*4096 && places[off] != l {
			t.Errorf("block at %d moved from %+v to %+v", off, places[off], l)
		}
	}
	v.checkContent(2, data)
	v.checkInvariants()
	v.reopen()
	v.checkContent(2, data)
}

// TestInPlaceBytesLostAfterCommit: the commit of blocks written in place
// became durable but their bytes did not (a metadata flush syncs only
// stored bytes, blob.StoredSyncer), and the power went: after recovery
// the blocks read as the bytes the disk kept, found by their zone's
// intent record, never as damage.
func TestInPlaceBytesLostAfterCommit(t *testing.T) {
	v := newInPlaceEnv(t)
	r := rand.New(rand.NewPCG(11, 12))
	data := testutil.RandBytes(r, 8*4096)
	v.write(2, 0, data)
	if err := v.e.Sync(); err != nil {
		t.Fatal(err)
	}
	places := v.ownedPlaces(2)
	over := testutil.RandBytes(r, 2*4096)
	v.write(2, 3*4096, over)
	if n := v.intentRecords(); n != 1 {
		t.Fatalf("%d intent records after the write in place, want 1", n)
	}
	// What the disk kept: the old bytes of one block, half of each of
	// the other's.
	torn := append(bytes.Clone(over[4096:4096+2048]), data[4*4096+2048:5*4096]...)
	if err := v.e.blobs.(blob.Overwriter).Overwrite([]blob.Loc{places[3*4096], places[4*4096]},
		[][]byte{data[3*4096 : 4*4096], torn}); err != nil {
		t.Fatal(err)
	}
	v.crash()
	rec, err := v.e.Recover()
	if err != nil {
		t.Fatal(err)
	}
	if rec.RetakenBlocks != 2 {
		t.Errorf("recovery took %d blocks as found, want 2", rec.RetakenBlocks)
	}
	copy(data[4*4096:], torn)
	v.checkContent(2, data)
	v.checkInvariants()
}

// TestInPlacePlanGoesStale: a transaction takes the old extents a plan
// read (PlanInPlace) only while no commit changed the file's extents
// since; after one (here a punch of part of the range), it reads them
// again, and the write leaves the right bytes and sound counts.
func TestInPlacePlanGoesStale(t *testing.T) {
	v := newInPlaceEnv(t)
	r := rand.New(rand.NewPCG(13, 14))
	data := testutil.RandBytes(r, 8*4096)
	v.write(2, 0, data)
	plan := func(off int64, p []byte) []*Prepared { return v.prepare(2, off, p) }
	planned := func(ps []*Prepared) bool {
		tx := v.begin()
		defer tx.Abort()
		last := ps[len(ps)-1]
		_, ok := tx.plannedExtents(2, [][2]int64{{ps[0].Off, last.Off + int64(last.Len)}}, [][]*Prepared{ps})
		return ok
	}

	over := testutil.RandBytes(r, 4*4096)
	ps := plan(2*4096, over)
	if !planned(ps) {
		t.Fatal("a fresh plan is not taken")
	}
	v.do(func(tx *Tx) error { _, err := tx.Punch(2, 3*4096, 5*4096); return err })
	if planned(ps) {
		t.Fatal("a plan is taken after a commit changed the file's extents")
	}
	v.do(func(tx *Tx) error { _, err := tx.WriteChunks(2, ps); return err })
	copy(data[2*4096:], over)
	v.checkContent(2, data)
	v.checkInvariants()

	// A plan stays good after commits to another file and to another
	// part of the same file (another connection's stream), and goes
	// stale once a commit reaches the extents it read.
	other := plan(6*4096, testutil.RandBytes(r, 4096))
	v.write(3, 0, testutil.RandBytes(r, 4096))
	if !planned(other) {
		t.Error("a plan is dropped after a commit to another file")
	}
	v.write(2, 0, testutil.RandBytes(r, 2*4096))
	if !planned(other) {
		t.Error("a plan is dropped after a commit to another range of the file")
	}
	v.write(2, 7*4096, testutil.RandBytes(r, 4096))
	if !planned(other) {
		t.Error("a plan is dropped after a commit next to its range")
	}
	v.write(2, 5*4096, testutil.RandBytes(r, 2*4096))
	if planned(other) {
		t.Error("a plan is taken after a commit overwrote its range")
	}

	// A plan older than the changes the engine keeps is read again.
	old := plan(0, testutil.RandBytes(r, 4096))
	for i := range extentLogSize + 1 {
		v.write(3, int64(i%4)*4096, testutil.RandBytes(r, 4096))
	}
	if planned(old) {
		t.Error("a plan is taken though the changes since it are no longer known")
	}
}
