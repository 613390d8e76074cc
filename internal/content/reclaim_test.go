package content

import (
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/chunker"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

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
