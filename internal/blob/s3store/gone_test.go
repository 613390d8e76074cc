package s3store

import (
	"errors"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// TestGoneTellsDeletedPacks: a store knows the packs it deleted and, once
// a read found one missing, those another process deleted; packs that
// exist are not gone.
func TestGoneTellsDeletedPacks(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "gone")
	cfg.CacheBytes = -1
	a := mustOpen(t, cfg)
	defer a.Close()
	r := rand.New(rand.NewPCG(41, 41))
	locs, _ := putSynced(t, a, r, 3)
	kept, _ := putSynced(t, a, r, 1)
	pack := locs[0].Segment
	if locs[2].Segment != pack || kept[0].Segment == pack {
		t.Fatalf("chunks in packs %v and %v; want the first three in one pack, the last in another", locs, kept)
	}
	cfgB := cfg
	cfgB.Dir = t.TempDir()
	b := mustOpen(t, cfgB) // lists the pack before a deletes it
	defer b.Close()
	if a.Gone(pack) || b.Gone(pack) {
		t.Fatal("a pack that exists is gone")
	}
	for _, l := range locs {
		if err := a.Free(l); err != nil {
			t.Fatal(err)
		}
	} // the last Free deletes the pack: all of it is dead
	if _, err := a.SegmentSize(pack); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pack %d of freed chunks still exists (%v)", pack, err)
	}
	if !a.Gone(pack) {
		t.Error("the store that deleted a pack does not know it is gone")
	}
	if b.Gone(pack) {
		t.Error("another store knows a pack is gone before reading it")
	}
	if _, err := b.Read(locs[1], nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read of a deleted pack: %v, want a missing object", err)
	}
	if !b.Gone(pack) {
		t.Error("a read found the pack missing, and the store does not know it is gone")
	}
	if a.Gone(kept[0].Segment) || b.Gone(kept[0].Segment) {
		t.Error("a pack that exists is gone")
	}
}
