package volume

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/pgtest"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
	"github.com/doppelfs/doppel/internal/vfs"
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

// BenchmarkS3SmallFileOps runs the small-file phases of bench/shared.sh's
// fileops on a volume in PostgreSQL + S3 (both on loopback), b.N files
// each: create; write 1 KiB + flush + release (a close); lookup (an lstat
// whose dentry the kernel dropped); unlink. For each phase it reports the
// time per file and what it cost per file on the wire: PostgreSQL round
// trips (pgstore.Store.RoundTrips) and S3 requests (a counting proxy in
// front of versitygw). "bg" is what the unlinks left to the background
// (the reclaimer's syncs, pack deletions and free-record drops), counted
// until the volume has closed.
func BenchmarkS3SmallFileOps(b *testing.B) {
	pg, s3srv := pgtest.Start(b), s3test.Start(b)
	b.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	b.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	b.Setenv("PGPASSWORD", pg.Password)
	counter := newS3Counter(b, s3srv.Endpoint)
	dsn := pg.CreateDB(b, "bench")
	dir := filepath.Join(b.TempDir(), "store")
	data := fmt.Sprintf("s3://%s/%s?endpoint=%s&region=%s", s3srv.Bucket, "bench", counter.srv.URL, s3test.Region)
	testutil.Check(b, Init(dir, InitOptions{Meta: dsn, Data: data}))
	v, err := Open(dir, quietLog())
	testutil.Check(b, err)
	pgs := v.Meta.(*pgstore.Store)
	fs, c := v.NS, vfs.Caller{}
	d, err := fs.Mkdir(c, 1, "d", 0o755)
	testutil.Check(b, err)
	content := testutil.SeededBytes(1, 1024)
	handles := make([]vfs.Handle, b.N)
	name := func(i int) string { return fmt.Sprintf("f%d", i) }

	phase := func(label string, op func(i int) error) {
		b.Helper()
		t0, rt0, s30 := time.Now(), pgs.RoundTrips(), counter.read()
		for i := range b.N {
			testutil.Check(b, op(i))
		}
		report(b, label, time.Since(t0), pgs.RoundTrips()-rt0, counter.read().minus(s30))
	}
	b.ResetTimer()
	phase("create", func(i int) (err error) {
		_, handles[i], err = fs.Create(c, d.Ino, name(i), 0o644, syscall.O_WRONLY)
		return err
	})
	phase("close", func(i int) error {
		content[0], content[1], content[2], content[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24) // no dedup
		if _, err := fs.Write(handles[i], 0, content); err != nil {
			return err
		}
		return errors.Join(fs.Flush(handles[i]), fs.Release(handles[i]))
	})
	phase("lookup", func(i int) error {
		_, err := fs.Lookup(d.Ino, name(i))
		return err
	})
	phase("unlink", func(i int) error { return fs.Unlink(d.Ino, name(i)) })
	b.StopTimer()
	rt0, s30 := pgs.RoundTrips(), counter.read()
	testutil.Check(b, v.Close()) // stops the reclaimer after its last pass
	report(b, "bg", 0, pgs.RoundTrips()-rt0, counter.read().minus(s30))
}

// report adds a phase's figures per file to b's metrics.
func report(b *testing.B, label string, took time.Duration, trips int64, s3 s3Requests) {
	n := float64(b.N)
	if took > 0 {
		b.ReportMetric(float64(took.Microseconds())/n, "µs/"+label)
	}
	b.ReportMetric(float64(trips)/n, "pg/"+label)
	b.ReportMetric(float64(s3.total())/n, "s3/"+label)
}
