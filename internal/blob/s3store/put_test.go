package s3store

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// A PutMany's last chunks go into the pack before them when they fit its
// slack: a batch a little over twice PackSize fills two packs (the second
// one past PackSize), not two and a tiny third; a batch whose tail is too
// big for the slack still gets a third pack, and no pack grows past
// PackSize and its slack. Every chunk reads back from a fresh store.
func TestPutManyLeavesNoTinyTailPack(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "slack")
	s := mustOpen(t, cfg)
	defer s.Close()
	r := rand.New(rand.NewPCG(3, 3))
	const chunk = 8 << 10 // a multiple of blob.Align: no padding between chunks
	for _, c := range []struct {
		bytes int64
		packs int
	}{
		{2*cfg.PackSize + 2*chunk, 2},
		{2*cfg.PackSize + cfg.PackSize/4, 2},
		{2*cfg.PackSize + cfg.PackSize/2, 3},
	} {
		var data [][]byte
		for n := int64(0); n < c.bytes; n += chunk {
			data = append(data, testutil.RandBytes(r, chunk))
		}
		locs, err := s.PutMany(data)
		testutil.Check(t, err)
		testutil.Check(t, s.SyncLocs(locs))
		ends := map[uint32]int64{}
		for _, l := range locs {
			ends[l.Segment] = max(ends[l.Segment], int64(l.Offset)+int64(l.Length))
		}
		if len(ends) != c.packs {
			t.Errorf("%d bytes in chunks of %d went into %d packs %v; want %d", c.bytes, chunk, len(ends), ends, c.packs)
		}
		for num, end := range ends {
			if end > cfg.PackSize+cfg.PackSize/4 {
				t.Errorf("pack %d holds %d bytes, past PackSize %d and its slack", num, end, cfg.PackSize)
			}
		}
		verifyFresh(t, cfg, locs, data)
	}
}

// The running CRC32C of each pack, updated as chunks of any length (so
// with padding between them) are copied in, is that of its bytes, and the
// server takes every pack under it (it refuses a body whose checksum
// header does not match: TestPutChecksumRefused).
func TestPackChecksumFollowsItsBytes(t *testing.T) {
	srv := s3test.Start(t)
	s := mustOpen(t, testConfig(t, srv, "packcrc"))
	defer s.Close()
	r := rand.New(rand.NewPCG(5, 5))
	var locs []blob.Loc
	var data [][]byte
	for range 40 {
		var batch [][]byte
		for range 1 + r.IntN(6) {
			batch = append(batch, testutil.RandBytes(r, 1+r.IntN(50<<10)))
		}
		got, err := s.PutMany(batch)
		testutil.Check(t, err)
		locs, data = append(locs, got...), append(data, batch...)
		s.mu.Lock()
		if o := s.open; o != nil && o.crc != crc32.Checksum(o.buf, castagnoli) {
			t.Errorf("open pack %d: running CRC32C %08x, its bytes' %08x", o.num, o.crc, crc32.Checksum(o.buf, castagnoli))
		}
		s.mu.Unlock()
	}
	testutil.Check(t, s.Sync())
	checkAll(t, s, locs, data)
}

// A chunk larger than a pack's memory moves the pack's bytes to the heap;
// the pack still uploads and reads back whole, and its memory is reused.
func TestChunkOutgrowingPackMemory(t *testing.T) {
	srv := s3test.Start(t)
	s := mustOpen(t, testConfig(t, srv, "outgrow"))
	defer s.Close()
	r := rand.New(rand.NewPCG(9, 9))
	big := testutil.RandBytes(r, 3*s.packCap())
	small := testutil.RandBytes(r, 5000)
	var locs []blob.Loc
	for _, d := range [][]byte{small, big, small, big} {
		l, err := s.Put(d)
		if err != nil {
			t.Fatal(err)
		}
		locs = append(locs, l)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	checkAll(t, s, locs, [][]byte{small, big, small, big})
}
