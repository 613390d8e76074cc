package s3store

import (
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// BenchmarkStreamRead reads 64 MiB of 64 KiB chunks the way content's
// readahead does for a sequential reader: each step prefetches the next
// 32 MiB and reads the chunks of the step before, from memory. Ranges are
// not written to the cache (a long scan), so what is measured is the
// GETs, the staging and the copies.
func BenchmarkStreamRead(b *testing.B) {
	srv := s3test.Start(b)
	cfg := testConfig(b, srv, "bench")
	cfg.PackSize = 4 << 20
	cfg.CacheBytes = -1
	s := mustOpen(b, cfg)
	defer s.Close()
	r := rand.New(rand.NewPCG(1, 1))
	var locs []blob.Loc
	for range 1024 {
		loc, err := s.Put(testutil.RandBytes(r, 64<<10))
		if err != nil {
			b.Fatal(err)
		}
		locs = append(locs, loc)
	}
	if err := s.Sync(); err != nil {
		b.Fatal(err)
	}
	const step, ahead = 128, 512 // chunks: 8 MiB read per step, 32 MiB prefetched
	buf := make([]byte, 64<<10)
	b.SetBytes(int64(len(locs)) << 16)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s.Prefetch(locs[:ahead])
		for i := 0; i < len(locs); i += step {
			s.Prefetch(locs[min(i+step, len(locs)):min(i+ahead, len(locs))])
			for _, l := range locs[i : i+step] {
				if _, err := s.Read(l, buf); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}
