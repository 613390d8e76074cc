package content

import (
	"testing"

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
