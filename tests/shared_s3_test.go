package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/pgtest"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// s3Volume inits a shared volume on its own PostgreSQL server and
// versitygw (whatever DOPPEL_TEST_META says) with chunk data under
// prefix, and mounts it. The credentials are in the environment only
// (PGPASSWORD, AWS_*), which the daemon inherits; cleanups unmount the
// volume before they stop the servers.
func s3Volume(t *testing.T, prefix string, initArgs ...string) (*volume, *s3test.Server, *pgtest.Server) {
	t.Helper()
	return s3VolumeWith(t, pgtest.Options{}, prefix, initArgs...)
}

// s3VolumeWith is s3Volume on a PostgreSQL server started with o.
func s3VolumeWith(t *testing.T, o pgtest.Options, prefix string, initArgs ...string) (*volume, *s3test.Server, *pgtest.Server) {
	t.Helper()
	requireDoppel(t)
	pg := pgtest.StartWith(t, o)
	dsn := pg.CreateDB(t, "e2e")
	s3srv := s3test.Start(t)
	t.Setenv("PGPASSWORD", pg.Password)
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	meta := strings.Replace(dsn, ":"+pg.Password+"@", "@", 1)
	data := fmt.Sprintf("s3://%s/%s?endpoint=%s&region=%s", s3srv.Bucket, prefix, s3srv.Endpoint, s3test.Region)
	v := &volume{Store: realTempDir(t), Mnt: realTempDir(t), logPath: filepath.Join(t.TempDir(), "doppel.log")}
	t.Cleanup(func() { v.cleanup(t) })
	args := append([]string{"init", "--store", v.Store, "--meta", meta, "--data", data, "--cache-size", "64M"}, initArgs...)
	if out, err := runDoppel(time.Minute, args...); err != nil {
		t.Fatalf("doppel %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	v.mount(t)
	return v, s3srv, pg
}

// packObjects lists the pack objects under prefix.
func packObjects(t *testing.T, srv *s3test.Server, prefix string) int {
	t.Helper()
	out, err := srv.Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(srv.Bucket), Prefix: aws.String(prefix + "/packs/")})
	testutil.Check(t, err)
	return len(out.Contents)
}

// writeSynced writes data to path and fsyncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// TestSharedS3VolumeEndToEnd: a volume with metadata in PostgreSQL and
// chunk data in S3, through FUSE: files read back, cp deduplicates, a
// clone is isolated both ways, deleting a file deletes the pack objects
// that held only its data and df shows the space back; after an unmount
// fsck finds it clean, and a remount reads everything back. The store
// directory holds neither password nor S3 secret.
func TestSharedS3VolumeEndToEnd(t *testing.T) {
	v, srv, pg := s3Volume(t, "e2e", "--chunking", "fixed:64K")

	big := testutil.SeededBytes(11, 3<<20)
	testutil.Check(t, os.MkdirAll(v.path("src", "sub"), 0o755))
	testutil.Check(t, os.WriteFile(v.path("src", "big"), big, 0o644))
	testutil.Check(t, os.WriteFile(v.path("src", "sub", "small"), []byte("hello"), 0o644))
	wantFile(t, v.path("src", "big"), big)
	before := v.df(t)
	if out, err := exec.Command("cp", v.path("src", "big"), v.path("src", "dup")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	wantFile(t, v.path("src", "dup"), big)
	if after := v.df(t); after.PhysicalBytes != before.PhysicalBytes || after.LogicalBytes < before.LogicalBytes+int64(len(big)) {
		t.Errorf("cp of a 3 MiB file: physical %d -> %d bytes, logical %d -> %d; want physical unchanged (deduplicated)",
			before.PhysicalBytes, after.PhysicalBytes, before.LogicalBytes, after.LogicalBytes)
	}

	cloneKeepsChangesApart(t, v, big)

	// A file of its own packs: deleting it deletes them.
	base := v.df(t)
	basePacks := packObjects(t, srv, "e2e")
	victim := testutil.SeededBytes(12, 12<<20)
	testutil.Check(t, writeSynced(v.path("victim"), victim))
	full := v.df(t)
	alloc := func(s dfStats) int64 { return int64(s.Raw["allocated_bytes"].(float64)) }
	// At least one pack of its own (12 MiB go into one 16 MiB pack, or two
	// when a stream commit seals the first early).
	if alloc(full) < alloc(base)+int64(len(victim)) || packObjects(t, srv, "e2e") <= basePacks {
		t.Fatalf("after writing 12 MiB: allocated %d -> %d bytes, packs %d -> %d", alloc(base), alloc(full), basePacks, packObjects(t, srv, "e2e"))
	}
	testutil.Check(t, os.Remove(v.path("victim")))
	var now dfStats
	for range 600 { // the reclaimer frees chunks in the background
		if now = v.df(t); alloc(now) <= alloc(base) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if alloc(now) > alloc(base) || packObjects(t, srv, "e2e") > basePacks {
		t.Errorf("after deleting the 12 MiB file: allocated %d bytes (%d before it), %d packs (%d before it)",
			alloc(now), alloc(base), packObjects(t, srv, "e2e"), basePacks)
	}

	// A pack left part dead: the second chunk of a file is freed.
	part := testutil.SeededBytes(13, 128<<10)
	testutil.Check(t, writeSynced(v.path("part"), part))
	testutil.Check(t, os.Truncate(v.path("part"), 64<<10))
	v.umount(t)
	v.fsckStrict(t)
	// The dead-span ledger is in PostgreSQL: the store directory's S3
	// state may go. Losing the ledger's records leaves the freed span
	// reclaimable; a repair records it again and damages nothing.
	testutil.Check(t, os.RemoveAll(filepath.Join(v.Store, "s3")))
	v.fsckStrict(t)
	dropDeadRecords(t, pg.DSN("e2e"), v.Store)
	var rep struct {
		Problems []fsckProblem `json:"problems"`
	}
	fsckJSON(t, &rep, "--store", v.Store)
	if len(rep.Problems) != 1 || rep.Problems[0].Kind != "orphan-chunk-space" || !strings.Contains(rep.Problems[0].Detail, "s3://") {
		t.Errorf("fsck without the ledger: %+v, want one orphan-chunk-space problem naming the pack object", rep.Problems)
	}
	if out, err := runDoppel(5*time.Minute, "fsck", "--repair", "--verify-data", "--store", v.Store); err != nil {
		t.Fatalf("doppel fsck --repair: %v\n%s", err, out)
	}
	v.fsckStrict(t)
	filepath.Walk(v.Store, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(pg.Password)) || bytes.Contains(b, []byte(s3test.SecretKey)) {
				t.Errorf("%s holds a secret", p)
			}
		}
		return nil
	})
	// Without the local cache the reads come from S3.
	testutil.Check(t, os.RemoveAll(filepath.Join(v.Store, "s3", "cache")))
	v.mount(t)
	wantFile(t, v.path("src", "big"), big)
	wantFile(t, v.path("copy", "big"), big)
	wantFile(t, v.path("copy", "dup"), big)
	wantFile(t, v.path("copy", "sub", "small"), []byte("changed in the clone"))
	wantFile(t, v.path("part"), part[:64<<10])
	v.umount(t)

	// Without S3 credentials the mount fails and says where they belong.
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	out, err := exec.Command(doppelBin, "mount", "--store", v.Store, v.Mnt).CombinedOutput()
	if err == nil {
		v.mounted = true
		t.Fatalf("mounted without S3 credentials:\n%s", out)
	}
	if !strings.Contains(string(out), "AWS_ACCESS_KEY_ID") {
		t.Errorf("mount without S3 credentials: %v\n%s\nwant a hint naming AWS_ACCESS_KEY_ID", err, out)
	}
}

// TestSharedVolumeServiceFault: the S3 server, or PostgreSQL, stops in the
// middle of a write load (each file written and fsync'd) and starts again:
// every file whose fsync succeeded reads back, writes succeed again
// without a remount, and fsck finds the volume clean.
func TestSharedVolumeServiceFault(t *testing.T) {
	t.Run("S3", func(t *testing.T) {
		v, srv, _ := s3Volume(t, "fault", "--chunking", "fixed:64K")
		writeLoadThroughOutage(t, v, func() {
			srv.Stop()
			time.Sleep(2 * time.Second) // an outage, while writes go on
			srv.Restart(t)
		})
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		v, _, pg := s3Volume(t, "pgfault", "--chunking", "fixed:64K")
		// Stopping ends every session: commits in flight fail (their
		// files are not acknowledged) or are sent again on a new
		// connection once the server is back.
		writeLoadThroughOutage(t, v, func() { pg.Outage(t, 2*time.Second) })
	})
	t.Run("PostgreSQLCrash", func(t *testing.T) {
		v, _, pg := s3Volume(t, "pgcrash", "--chunking", "fixed:64K")
		writeLoadThroughOutage(t, v, func() { pg.Crash(t) })
	})
	t.Run("PostgreSQLCrashLosesCommits", func(t *testing.T) {
		// The WAL writer waits 10 s, so a crash loses what the daemon
		// committed since its last flush (at most about a second ago):
		// it sends that again and goes on, with every file it
		// acknowledged still there, none of them fsync'd.
		v, _, pg := s3VolumeWith(t, pgtest.Options{Settings: []string{"wal_writer_delay=10s"}}, "pgcrashlost", "--chunking", "fixed:64K")
		content := func(i int) []byte { return fmt.Appendf(nil, "file %d\n", i) }
		write := func(from, to int) {
			for i := from; i < to; i++ {
				testutil.Check(t, os.WriteFile(v.path(fmt.Sprintf("f%03d", i)), content(i), 0o644))
			}
		}
		check := func(n int) {
			for i := range n {
				wantFile(t, v.path(fmt.Sprintf("f%03d", i)), content(i))
			}
		}
		write(0, 100)
		pg.Crash(t)
		check(100) // the mount goes on
		write(100, 150)
		check(150)
		logged, _ := os.ReadFile(filepath.Join(v.Store, "daemon.log"))
		if !strings.Contains(string(logged), "they were sent again") {
			t.Errorf("the daemon did not send lost commits again after the crash; its log:\n%s", logged)
		}
		v.umount(t)
		v.fsck(t)
		v.mount(t)
		check(150)
	})
}

// writeLoadThroughOutage runs a load of files written and fsync'd into v,
// calls outage once some are acknowledged, and checks that writes are
// acknowledged again afterwards, that every acknowledged file reads back
// (also after a remount without the local read cache) and that fsck is
// clean.
//
// The load runs in a shell, not in the test process: a fork of a process
// holding a file of the mount (to restart the server) would close that
// file in the child, and the kernel sends FUSE a flush for it, which
// waits for the fsync in flight, which waits for the server.
func writeLoadThroughOutage(t *testing.T, v *volume, outage func()) {
	src := t.TempDir()
	stopFile := filepath.Join(t.TempDir(), "stop")
	load := exec.Command("sh", "-c", `i=0
while [ ! -e "$STOP" ]; do
	head -c $((262144 + i * 1000)) /dev/urandom > "$SRC/f$i"
	if cp "$SRC/f$i" "$MNT/f$i" && sync "$MNT/f$i"; then echo "f$i"; else echo "failed f$i" >&2; fi
	i=$((i + 1))
done`)
	load.Env = append(os.Environ(), "STOP="+stopFile, "SRC="+src, "MNT="+v.Mnt)
	out, err := load.StdoutPipe()
	testutil.Check(t, err)
	var stderr bytes.Buffer
	load.Stderr = &stderr
	testutil.Check(t, load.Start())
	acked := make(chan string, 1<<16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			acked <- sc.Text()
		}
		close(acked)
	}()
	var names []string
	stopLoad := func() {
		if _, err := os.Stat(stopFile); err == nil {
			return
		}
		os.WriteFile(stopFile, nil, 0o600)
		kill := time.AfterFunc(2*time.Minute, func() { load.Process.Kill() }) // a hung mount
		defer kill.Stop()
		for name := range acked {
			names = append(names, name)
		}
		load.Wait()
	}
	defer stopLoad() // however the test ends, before the unmount
	waitFor := func(n int) {
		for len(names) < n {
			select {
			case name, ok := <-acked:
				if !ok {
					t.Fatalf("the write load ended with %d files acknowledged:\n%s", len(names), stderr.Bytes())
				}
				names = append(names, name)
			case <-time.After(5 * time.Minute): // a liveness bound, not a speed check
				t.Fatalf("no file acknowledged for 5 minutes (%d so far)", len(names))
			}
		}
	}
	waitFor(5)
	outage()
	waitFor(len(names) + 5) // writes succeed again, without a remount
	stopLoad()
	t.Logf("%d files acknowledged; failed: %s", len(names), strings.ReplaceAll(stderr.String(), "\n", " "))
	check := func() {
		for _, name := range names {
			want, err := os.ReadFile(filepath.Join(src, name))
			testutil.Check(t, err)
			wantFile(t, v.path(name), want)
		}
	}
	check()
	v.umount(t)
	v.fsck(t)
	testutil.Check(t, os.RemoveAll(filepath.Join(v.Store, "s3")))
	v.mount(t)
	check()
}

// dropDeadRecords deletes the S3 store's dead-span records of the volume
// in store from its schema.
func dropDeadRecords(t *testing.T, dsn, store string) {
	t.Helper()
	var shared struct {
		Schema string `json:"schema"`
	}
	b, err := os.ReadFile(filepath.Join(store, "shared.json"))
	testutil.Check(t, err)
	testutil.Check(t, json.Unmarshal(b, &shared))
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	testutil.Check(t, err)
	defer c.Close(ctx)
	lo, hi := schema.DeadRange()
	tag, err := c.Exec(ctx, "DELETE FROM "+pgx.Identifier{shared.Schema, "kv"}.Sanitize()+" WHERE k >= $1 AND k < $2", lo, hi)
	testutil.Check(t, err)
	if tag.RowsAffected() == 0 {
		t.Fatalf("no dead-span records in schema %s", shared.Schema)
	}
}
