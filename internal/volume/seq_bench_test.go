package volume

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/pgtest"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
	"github.com/doppelfs/doppel/internal/vfs"
)

// BenchmarkSequential writes a file in 1 MiB writes and fsyncs it, then
// reads it back cold (volume reopened, the S3 store's read cache deleted)
// in 1 MiB reads, on a shared volume (PostgreSQL + S3 on loopback) and on
// an embedded one: the volume-level half of bench/shared.sh's sequential
// rows, without FUSE, for profiling (-cpuprofile, -trace). The file is
// DOPPEL_BENCH_SEQ_MIB MiB (default 128) of random bytes. The shared
// volume reports PostgreSQL's round trips per MiB; DOPPEL_BENCH_PG_DELAY
// (a duration, e.g. 250us) puts a proxy that holds data that long each
// way between the volume and PostgreSQL, as for a server elsewhere.
//
//	go test -run '^$' -bench Sequential -benchtime 3x ./internal/volume
func BenchmarkSequential(b *testing.B) {
	size := 128 << 20
	if s := os.Getenv("DOPPEL_BENCH_SEQ_MIB"); s != "" {
		n, err := strconv.Atoi(s)
		testutil.Check(b, err)
		size = n << 20
	}
	data := testutil.SeededBytes(7, size)
	b.Run("shared", func(b *testing.B) {
		pg, s3srv := pgtest.Start(b), s3test.Start(b)
		b.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
		b.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
		b.Setenv("PGPASSWORD", pg.Password)
		e := &s3env{pg: pg, s3: s3srv, dsn: pg.CreateDB(b, "bench")}
		if d := os.Getenv("DOPPEL_BENCH_PG_DELAY"); d != "" {
			oneWay, err := time.ParseDuration(d)
			testutil.Check(b, err)
			e.dsn = viaDelayProxy(b, e.dsn, oneWay)
		}
		n := 0
		benchSequential(b, data, func() string {
			n++
			dir := filepath.Join(b.TempDir(), "store")
			testutil.Check(b, Init(dir, InitOptions{Meta: e.dsn, Data: e.dataURL(fmt.Sprintf("seq%d", n)), CacheBytes: benchCacheBytes(b)}))
			return dir
		})
	})
	b.Run("embedded", func(b *testing.B) {
		benchSequential(b, data, func() string {
			dir := filepath.Join(b.TempDir(), "store")
			testutil.Check(b, Init(dir, InitOptions{}))
			return dir
		})
	})
}

// benchSequential runs the write and cold read halves, each iteration on
// a fresh volume that newVolume makes.
func benchSequential(b *testing.B, data []byte, newVolume func() string) {
	b.Run("write", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for range b.N {
			b.StopTimer()
			v, err := Open(newVolume(), quietLog())
			testutil.Check(b, err)
			trips := pgTrips(v)
			b.StartTimer()
			testutil.Check(b, writeSequential(v, data))
			b.StopTimer()
			reportTrips(b, v, trips, len(data))
			testutil.Check(b, v.Close())
		}
	})
	b.Run("coldread", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		dir := newVolume()
		v, err := Open(dir, quietLog())
		testutil.Check(b, err)
		testutil.Check(b, writeSequential(v, data))
		testutil.Check(b, v.Close())
		buf := make([]byte, 1<<20)
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			testutil.Check(b, os.RemoveAll(filepath.Join(dir, S3Dir, "cache")))
			v, err := Open(dir, quietLog())
			testutil.Check(b, err)
			a, err := v.NS.Lookup(1, "seq")
			testutil.Check(b, err)
			h, err := v.NS.Open(a.Ino, syscall.O_RDONLY)
			testutil.Check(b, err)
			trips := pgTrips(v)
			b.StartTimer()
			for off := 0; off < len(data); off += len(buf) {
				n, err := v.NS.Read(h, int64(off), buf)
				testutil.Check(b, err)
				if n != min(len(buf), len(data)-off) {
					b.Fatalf("read %d bytes at %d", n, off)
				}
			}
			b.StopTimer()
			reportTrips(b, v, trips, len(data))
			testutil.Check(b, v.NS.Release(h))
			testutil.Check(b, v.Close())
		}
	})
}

// viaDelayProxy returns dsn with its host and port those of a
// testutil.DelayProxy to them.
func viaDelayProxy(b *testing.B, dsn string, oneWay time.Duration) string {
	u, err := url.Parse(dsn)
	testutil.Check(b, err)
	u.Host = testutil.DelayProxy(b, u.Host, oneWay)
	return u.String()
}

// pgTrips is the round trips v's PostgreSQL store sent so far (0 for an
// embedded volume).
func pgTrips(v *Volume) int64 {
	if pgs, ok := v.Meta.(*pgstore.Store); ok {
		return pgs.RoundTrips()
	}
	return 0
}

// reportTrips adds the PostgreSQL round trips since since, per MiB of
// n bytes, to b's metrics (last iteration's).
func reportTrips(b *testing.B, v *Volume, since int64, n int) {
	if _, ok := v.Meta.(*pgstore.Store); ok {
		b.ReportMetric(float64(pgTrips(v)-since)/float64(n>>20), "pg/MiB")
	}
}

// writeSequential writes data to the new file "seq" in 1 MiB writes,
// fsyncs and closes it.
func writeSequential(v *Volume, data []byte) error {
	_, h, err := v.NS.Create(vfs.Caller{}, 1, "seq", 0o644, syscall.O_WRONLY)
	if err != nil {
		return err
	}
	for off := 0; off < len(data); off += 1 << 20 {
		if _, err := v.NS.Write(h, int64(off), data[off:min(off+1<<20, len(data))]); err != nil {
			v.NS.Release(h)
			return err
		}
	}
	err = v.NS.Fsync(h, false)
	return errors.Join(err, v.NS.Flush(h), v.NS.Release(h))
}

// benchCacheBytes is DOPPEL_BENCH_CACHE_BYTES (negative: no read cache),
// else 0 (the default cache).
func benchCacheBytes(b *testing.B) int64 {
	s := os.Getenv("DOPPEL_BENCH_CACHE_BYTES")
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	testutil.Check(b, err)
	return n
}
