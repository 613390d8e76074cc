package volume

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/pgtest"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// BenchmarkCompactionSpaceBack measures what compaction gives back (issue
// 14, "space back after deleting") where deleting a file would not show
// it: a 150 MiB file of random data (fixed 64 KiB chunks, about 37 packs
// of 4 MiB) gets zeros written over two of every three 256 KiB blocks, as
// a database or VM image on the volume frees blocks (zeros become
// holes). The bucket's bytes are taken after the reclaimer freed the
// chunks (packs are then a third live, and none is deleted) and after
// compaction passes (default settings but a 1 s retire grace, so that the
// deletion of the rewritten packs is part of the figure) ran until none
// found a pack worth rewriting. Run with -benchtime=1x.
func BenchmarkCompactionSpaceBack(b *testing.B) {
	pg, s3srv := pgtest.Start(b), s3test.Start(b)
	b.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	b.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	b.Setenv("PGPASSWORD", pg.Password)
	b.Setenv(CompactEnv, "interval=off,retire-grace=1s")
	e := &s3env{pg: pg, s3: s3srv, dsn: pg.CreateDB(b, "bench")}
	const blocks, block = 600, 256 << 10
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	for i := range b.N {
		dir := filepath.Join(b.TempDir(), "store")
		testutil.Check(b, Init(dir, InitOptions{Meta: e.dsn + fmt.Sprintf("&schema=c%d", i), Data: e.dataURL(fmt.Sprintf("c%d", i)), Chunking: "fixed:64K"}))
		v, err := Open(dir, quietLog())
		testutil.Check(b, err)
		testutil.Check(b, writeFile(b, v, "image", testutil.SeededBytes(uint64(i+1), blocks*block), true))
		a, err := v.NS.Lookup(1, "image")
		testutil.Check(b, err)
		h, err := v.NS.Open(a.Ino, syscall.O_WRONLY)
		testutil.Check(b, err)
		zeros := make([]byte, block)
		for k := range blocks {
			if k%3 != 0 {
				_, err := v.NS.Write(h, int64(k*block), zeros)
				testutil.Check(b, err)
			}
		}
		testutil.Check(b, v.NS.Fsync(h, false))
		testutil.Check(b, v.NS.Release(h))
		testutil.Check(b, v.Engine.Sync())
		written := int64(blocks * block)
		time.Sleep(2 * time.Second) // the reclaimer frees the chunks (every 0.5 s)
		afterRm, packsRm, err := v.Blobs.Usage()
		testutil.Check(b, err)
		start := time.Now()
		passes := 0
		for ; passes < 50; passes++ { // until no pack is sparse enough to be worth a pass
			res, err := v.Engine.Compact(content.CompactConfig{}, false)
			testutil.Check(b, err)
			if res.Rewritten == 0 {
				break
			}
		}
		copied := time.Since(start)
		time.Sleep(1100 * time.Millisecond) // the retire grace
		_, err = v.Engine.Compact(content.CompactConfig{}, false)
		testutil.Check(b, err)
		took := time.Since(start)
		after, packsAfter, err := v.Blobs.Usage()
		testutil.Check(b, err)
		live := int64(blocks/3) * block
		b.Logf("written %.1f MiB; live after rm %.1f MiB; bucket after rm %.1f MiB in %d packs; after compaction %.1f MiB in %d packs; %d passes copying for %.2f s, all done %.2f s (with the 1.1 s grace)",
			mib(written), mib(live), mib(afterRm), packsRm, mib(after), packsAfter, passes, copied.Seconds(), took.Seconds())
		b.ReportMetric(float64(afterRm)/float64(live), "rm/live")
		b.ReportMetric(float64(after)/float64(live), "compacted/live")
		b.ReportMetric(took.Seconds(), "compact-s")
		testutil.Check(b, v.Close())
	}
}
