package content

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

func TestHoldReclaimDefersPunching(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K")})
	v.write(2, 0, testutil.RandBytes(rand.New(rand.NewPCG(7, 8)), 2*4096))
	release := v.e.HoldReclaim()
	v.do(func(tx *Tx) error { return tx.DropAll(2) })
	v.e.reclaimer.reclaim(true) // a pass while held does nothing
	if got := v.e.ReclaimedBytes(); got != 0 {
		t.Fatalf("%d bytes punched while reclaim was held", got)
	}
	release()
	v.e.reclaimer.reclaim(true)
	if got := v.e.ReclaimedBytes(); got != 2*4096 {
		t.Fatalf("%d bytes punched after the hold, want %d", got, 2*4096)
	}
}

func TestCorrectRefs(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K")})
	v.write(2, 0, testutil.RandBytes(rand.New(rand.NewPCG(9, 10)), 4096))
	var h schema.Hash
	var c schema.Chunk
	for h, c = range v.allChunks() {
	}
	// Counted 1 reference against a recorded 3 while a writer added one
	// since: the refcount becomes 2, not 1.
	c.Refs = 4
	v.do(func(tx *Tx) error { return tx.Batch().Set(schema.ChunkKey(h), c.Encode()) })
	v.do(func(tx *Tx) error { return tx.CorrectRefs(h, c.Segment, c.Offset, 3, 1, true) })
	if got := v.allChunks()[h].Refs; got != 2 {
		t.Fatalf("refcount %d after the correction, want 2", got)
	}
	// A record at another location is another chunk's story.
	tx := v.begin()
	if err := tx.CorrectRefs(h, c.Segment, c.Offset+4096, 2, 0, true); !errors.Is(err, ErrChunkChanged) {
		t.Fatalf("correcting a moved chunk: %v", err)
	}
	tx.Abort()
	// Dropping the extent and the last reference frees the chunk and
	// takes it off the counters.
	before := v.e.Stats()
	v.do(func(tx *Tx) error {
		if err := tx.DropExtent(2, 0, 4096); err != nil {
			return err
		}
		return tx.CorrectRefs(h, c.Segment, c.Offset, 2, 0, true)
	})
	st := v.e.Stats()
	if _, ok := v.allChunks()[h]; ok || st.Chunks != before.Chunks-1 || st.LogicalBytes != before.LogicalBytes-4096 {
		t.Fatalf("after freeing: chunk still there %v, stats %+v (before %+v)", ok, st, before)
	}
	v.e.Close()
	if got := v.e.ReclaimedBytes(); got != 4096 {
		t.Fatalf("reclaimed %d bytes, want 4096", got)
	}
	v.e = nil
}
