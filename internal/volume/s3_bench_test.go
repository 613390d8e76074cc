package volume

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/pgtest"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// BenchmarkS3SmallFiles creates, writes (4 KiB) and closes files on a
// volume with metadata in PostgreSQL and data in S3 (both on loopback),
// and reports the pack objects uploaded per file: without group commit
// every commit with new data uploads a pack of its own (docs/SHARED.md,
// section 8).
func BenchmarkS3SmallFiles(b *testing.B) {
	pg, s3srv := pgtest.Start(b), s3test.Start(b)
	b.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	b.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	b.Setenv("PGPASSWORD", pg.Password)
	e := &s3env{pg: pg, s3: s3srv, dsn: pg.CreateDB(b, "bench")}
	dir := filepath.Join(b.TempDir(), "store")
	testutil.Check(b, Init(dir, InitOptions{Meta: e.dsn, Data: e.dataURL("bench")}))
	v, err := Open(dir, quietLog())
	testutil.Check(b, err)
	_, packs0, err := v.Blobs.Usage()
	testutil.Check(b, err)
	data := testutil.SeededBytes(1, 4096)
	b.ResetTimer()
	for i := range b.N {
		data[0], data[1], data[2], data[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24) // no dedup
		testutil.Check(b, writeFile(b, v, fmt.Sprintf("f%d", i), data, false))
	}
	b.StopTimer()
	_, packs, err := v.Blobs.Usage()
	testutil.Check(b, err)
	b.ReportMetric(float64(packs-packs0)/float64(b.N), "packs/file")
	testutil.Check(b, v.Close())
}
