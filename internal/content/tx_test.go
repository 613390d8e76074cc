package content

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// The tests here cover what a transaction does with stored bytes it was
// handed but does not keep, and how a failed commit leaves the volume.

func TestAdoptedButUnusedChunksFreedOnCommit(t *testing.T) {
	// The namespace adopts a flush's chunks before editing metadata; if the
	// edits end up not referencing them, the commit gives their space back.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K")})
	data := testutil.RandBytes(rand.New(rand.NewPCG(61, 62)), 256<<10)
	ps, _, err := v.e.Prepare(0, data, true)
	if err != nil {
		t.Fatal(err)
	}
	tx := v.begin()
	tx.Adopt(ps)
	v.commit(tx)
	if got := v.e.ReclaimedBytes(); got != int64(len(data)) {
		t.Errorf("ReclaimedBytes = %d, want %d", got, len(data))
	}
	if u := v.usage(); u > 8<<10 {
		t.Errorf("blob store holds %d bytes that nothing references", u)
	}
	if st := v.e.Stats(); st != (schema.Stats{}) {
		t.Errorf("stats %+v, want zero", st)
	}
	v.checkInvariants()
}

func TestAdoptedChunksFreedOnAbort(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K")})
	data := testutil.RandBytes(rand.New(rand.NewPCG(63, 64)), 256<<10)
	ps, _, err := v.e.Prepare(0, data, true)
	if err != nil {
		t.Fatal(err)
	}
	tx := v.begin()
	tx.Adopt(ps)
	tx.Adopt(ps) // adopting twice frees once
	tx.Abort()
	if got := v.e.ReclaimedBytes(); got != int64(len(data)) {
		t.Errorf("ReclaimedBytes = %d, want %d", got, len(data))
	}
	if u := v.usage(); u > 8<<10 {
		t.Errorf("blob store holds %d bytes after abort", u)
	}
}

func TestDiscardFreesPreparedChunks(t *testing.T) {
	// Engine.Discard is for Prepares whose transaction never began.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K")})
	data := testutil.RandBytes(rand.New(rand.NewPCG(65, 66)), 256<<10)
	v.write(1, 0, data[:64<<10]) // one chunk already stored: not Discard's to free
	ps, _, err := v.e.Prepare(0, data, true)
	if err != nil {
		t.Fatal(err)
	}
	v.e.Discard(ps)
	if got := v.e.ReclaimedBytes(); got != int64(len(data))-64<<10 {
		t.Errorf("ReclaimedBytes = %d, want %d", got, len(data)-64<<10)
	}
	v.reopen()
	v.checkContent(1, data[:64<<10])
	v.checkInvariants()
}

// corruptRefs rewrites the chunk record of h with a different refcount,
// as damage (or a bug) would leave it.
func (v *env) corruptRefs(h schema.Hash, refs uint64) {
	v.t.Helper()
	c, ok := v.allChunks()[h]
	if !ok {
		v.t.Fatalf("no chunk %x", h[:8])
	}
	c.Refs = refs
	v.setChunk(h, c)
}

// setChunk writes c as chunk h's record, bypassing the engine.
func (v *env) setChunk(h schema.Hash, c schema.Chunk) {
	v.t.Helper()
	b := v.meta.NewBatch()
	defer b.Close()
	if err := b.Set(schema.ChunkKey(h), c.Encode()); err != nil {
		v.t.Fatal(err)
	}
	if err := b.Commit(false); err != nil {
		v.t.Fatal(err)
	}
}

func TestFailedCommitChangesNothing(t *testing.T) {
	needSegmentFiles(t, "measures freed space by the blob store's Usage; an S3 pack keeps a freed chunk's bytes (a dead span) until the whole pack is dead or a compaction pass rewrites it, which the test does not run")
	// A refcount that would go below zero fails the commit with ErrCorrupt.
	// Nothing of the transaction may stick: not its metadata, not its
	// counters, not the bytes its Prepares stored (including a chunk the
	// commit itself had to store again), and the transaction lock is free.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K")})
	r := rand.New(rand.NewPCG(67, 68))
	shared := testutil.RandBytes(r, 64<<10)
	v.write(1, 0, shared)
	v.write(2, 0, shared)
	exts := v.allExtents()
	v.corruptRefs(exts[0].Hash, 1) // two extents, but the record says one

	// A chunk that existed at Prepare time and is gone by commit time, so
	// that the commit stores it itself. Its hash sorts before the damaged
	// one, so that the commit (which goes in hash order) stores it before
	// failing.
	again := testutil.RandBytes(r, 64<<10)
	for h := schema.Sum(again); bytes.Compare(h[:], exts[0].Hash[:]) >= 0; h = schema.Sum(again) {
		again = testutil.RandBytes(r, 64<<10)
	}
	v.write(3, 0, again)
	psAgain, _, err := v.e.Prepare(0, again, true)
	if err != nil {
		t.Fatal(err)
	}
	v.do(func(tx *Tx) error { return tx.DropAll(3) })
	v.reopen() // punch the dropped chunk now

	fresh := testutil.RandBytes(r, 128<<10)
	psFresh, _, err := v.e.Prepare(0, fresh, true)
	if err != nil {
		t.Fatal(err)
	}

	statsBefore := v.e.Stats()
	exts = v.allExtents()
	v.reopen()                                   // settle the reclaimer before measuring
	usageBefore := v.usage() - int64(len(fresh)) // fresh is stored but not committed

	tx := v.begin()
	version := tx.Version()
	tx.Adopt(psFresh)
	if _, err := tx.WriteChunks(4, psFresh); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.WriteChunks(5, psAgain); err != nil {
		t.Fatal(err)
	}
	for _, ino := range []uint64{1, 2} {
		if err := tx.DropAll(ino); err != nil {
			t.Fatal(err)
		}
	}
	err = tx.Commit(false)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Commit: err = %v, want ErrCorrupt", err)
	}
	tx.Abort() // after a failed Commit: harmless

	if st := v.e.Stats(); st != statsBefore {
		t.Errorf("stats after failed commit %+v, before %+v", st, statsBefore)
	}
	if got := v.allExtents(); len(got) != len(exts) {
		t.Errorf("%d extents after failed commit, %d before", len(got), len(exts))
	}
	v.checkContent(1, shared)
	v.checkContent(4, make([]byte, len(fresh)))
	v.reopen()
	if u := v.usage(); u > usageBefore+8<<10 {
		t.Errorf("blob store holds %d bytes after the failed commit, %d before it: %d bytes leaked",
			u, usageBefore, u-usageBefore)
	}

	// The lock is free and the version was not used up.
	done := make(chan *Tx, 1)
	go func() {
		tx, err := v.e.Begin()
		if err != nil {
			t.Error(err)
		}
		done <- tx
	}()
	var tx2 *Tx
	select {
	case tx2 = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Begin blocks: the failed transaction kept the lock")
	}
	if tx2 == nil {
		t.FailNow()
	}
	if tx2.Version() != version {
		t.Errorf("version after failed commit %d, want %d again", tx2.Version(), version)
	}
	tx2.Abort()
}

func TestCommitReferencesChunkStoredByEarlierPrepare(t *testing.T) {
	needSegmentFiles(t, "measures freed space by the blob store's Usage; an S3 pack keeps a freed chunk's bytes (a dead span) until the whole pack is dead or a compaction pass rewrites it, which the test does not run")
	// Prepare stores a chunk; another file's Prepare of the same bytes,
	// started before the first commits, finds nothing in the chunk table
	// and stores its own copy. Whichever commits second must use the
	// record the first made, and its reads must be right after a reopen.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:16K"), VerifyReads: true})
	data := testutil.RandBytes(rand.New(rand.NewPCG(69, 70)), 64<<10)
	psA, _, err := v.e.Prepare(0, data, true)
	if err != nil {
		t.Fatal(err)
	}
	psB, _, err := v.e.Prepare(16<<10, data, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		ino uint64
		ps  []*Prepared
	}{{2, psB}, {1, psA}} {
		tx := v.begin()
		tx.Adopt(w.ps)
		if _, err := tx.WriteChunks(w.ino, w.ps); err != nil {
			t.Fatal(err)
		}
		v.commit(tx)
	}
	v.reopen()
	v.checkContent(1, data)
	v.checkContent(2, append(make([]byte, 16<<10), data...))
	v.checkInvariants()
	if u, live := v.usage(), v.e.Stats().PhysicalBytes; u > live+8<<10 {
		t.Errorf("blob store holds %d bytes for %d live", u, live)
	}
	if !bytes.Equal(v.read(2, 16<<10, len(data)), data) {
		t.Error("second file reads wrong")
	}
}
