package s3store

import (
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// SyncLocs seals the open pack when it holds one of the locations and
// returns nil only once the packs holding them are in the object store (a
// fresh store without cache reads them); with the server stopped it fails
// for a location still in memory, and succeeds once the server is back.
func TestSyncLocs(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "synclocs")
	s := mustOpen(t, cfg)
	defer s.Close()
	r := rand.New(rand.NewPCG(8, 8))
	locs, data := putSome(t, s, r, 30) // several packs, the last one open
	last := locs[len(locs)-1]
	if err := s.SyncLocs(locs[len(locs)-1:]); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	open := s.open != nil && s.open.num == last.Segment
	s.mu.Unlock()
	if open {
		t.Fatal("SyncLocs left the pack holding its location open")
	}
	var same []int // the chunks in the last one's pack
	for i, l := range locs {
		if l.Segment == last.Segment {
			same = append(same, i)
		}
	}
	fresh := func(idx []int) {
		t.Helper()
		var ls = locs[:0:0]
		var ds = data[:0:0]
		for _, i := range idx {
			ls, ds = append(ls, locs[i]), append(ds, data[i])
		}
		verifyFresh(t, cfg, ls, ds)
	}
	fresh(same)

	srv.Stop()
	more, moreData := putSome(t, s, r, 2)
	if err := s.SyncLocs(more); err == nil {
		srv.Restart(t)
		t.Fatal("SyncLocs returned nil with the server stopped")
	}
	srv.Restart(t)
	if err := s.SyncLocs(more); err != nil {
		t.Fatalf("SyncLocs after restart: %v", err)
	}
	locs, data = append(locs, more...), append(data, moreData...)
	fresh([]int{len(locs) - 2, len(locs) - 1})
}
