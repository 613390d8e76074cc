package volume

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/blob/s3store"
	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/pgtest"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
	"github.com/doppelfs/doppel/internal/vfs"
)

// s3env is a PostgreSQL server and a versitygw for shared volumes whose
// chunk data is in S3, with the S3 credentials in the environment as a
// user's would be.
type s3env struct {
	pg  *pgtest.Server
	s3  *s3test.Server
	dsn string // with the password
}

func newS3Env(t *testing.T) *s3env {
	t.Helper()
	e := &s3env{pg: pgtest.Start(t), s3: s3test.Start(t)}
	e.dsn = e.pg.CreateDB(t, "vol")
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("PGPASSWORD", e.pg.Password) // shared.json keeps no password
	return e
}

// dataURL is the --data URL of prefix in the server's bucket.
func (e *s3env) dataURL(prefix string) string {
	return fmt.Sprintf("s3://%s/%s?endpoint=%s&region=%s", e.s3.Bucket, prefix, e.s3.Endpoint, s3test.Region)
}

// objects lists the keys under prefix.
func (e *s3env) objects(t *testing.T, prefix string) []string {
	t.Helper()
	out, err := e.s3.Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(e.s3.Bucket), Prefix: aws.String(prefix + "/")})
	testutil.Check(t, err)
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func writeFile(t testing.TB, v *Volume, name string, data []byte, sync bool) error {
	t.Helper()
	_, h, err := v.NS.Create(vfs.Caller{}, 1, name, 0o644, syscall.O_WRONLY)
	if err != nil {
		return err
	}
	if _, err := v.NS.Write(h, 0, data); err != nil {
		v.NS.Release(h)
		return err
	}
	if sync {
		err = v.NS.Fsync(h, false)
	} else {
		err = v.NS.Flush(h)
	}
	return errors.Join(err, v.NS.Release(h))
}

func readFile(t *testing.T, v *Volume, name string) []byte {
	t.Helper()
	a, err := v.NS.Lookup(1, name)
	testutil.Check(t, err)
	h, err := v.NS.Open(a.Ino, syscall.O_RDONLY)
	testutil.Check(t, err)
	defer v.NS.Release(h)
	buf := make([]byte, a.Size+1)
	n, err := v.NS.Read(h, 0, buf)
	testutil.Check(t, err)
	return buf[:n]
}

func checkClean(t *testing.T, dir string) *fsck.Report {
	t.Helper()
	c, err := OpenForCheck(dir, quietLog())
	testutil.Check(t, err)
	defer c.Close()
	rep, err := fsck.Check(c.Stores, fsck.Options{VerifyData: true})
	testutil.Check(t, err)
	if !rep.Clean() {
		t.Fatalf("fsck of %s: %+v", dir, rep.Problems)
	}
	return rep
}

// TestS3VolumeRoundTrip: init --meta --data makes a volume whose
// shared.json names the data URL and no secret; files written to it are
// packs under the prefix, read back after a reopen, and fsck (verifying
// every chunk through the S3 store) finds the volume clean.
func TestS3VolumeRoundTrip(t *testing.T) {
	e := newS3Env(t)
	dir := filepath.Join(t.TempDir(), "store")
	data := e.dataURL("vols/a")
	testutil.Check(t, Init(dir, InitOptions{Meta: e.dsn, Data: data, Chunking: "fixed:64K", CacheBytes: 8 << 20}))

	s, err := readShared(dir)
	testutil.Check(t, err)
	if s.Data != data || s.CacheBytes != 8<<20 {
		t.Errorf("shared.json: data %q cache %d, want %q and %d", s.Data, s.CacheBytes, data, 8<<20)
	}
	if _, err := os.Stat(filepath.Join(dir, "chunks")); err == nil {
		t.Errorf("a volume with data in S3 has a chunks directory")
	}

	v, err := Open(dir, quietLog())
	testutil.Check(t, err)
	big := testutil.SeededBytes(3, 5<<20)
	testutil.Check(t, writeFile(t, v, "big", big, true))
	testutil.Check(t, writeFile(t, v, "small", []byte("hello"), false))
	testutil.Check(t, v.Close())
	if keys := e.objects(t, "vols/a"); len(keys) == 0 {
		t.Fatalf("no objects under the prefix after writes")
	}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() && !strings.Contains(p, "/cache/") {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(s3test.SecretKey)) || bytes.Contains(b, []byte(e.pg.Password)) {
				t.Errorf("%s holds a secret", p)
			}
		}
		return nil
	})

	rep := checkClean(t, dir)
	if rep.BytesVerified < int64(len(big)) {
		t.Errorf("fsck verified %d bytes, want at least %d", rep.BytesVerified, len(big))
	}
	// A fresh store directory's cache is empty: the reads come from S3.
	testutil.Check(t, os.RemoveAll(filepath.Join(dir, S3Dir)))
	v, err = Open(dir, quietLog())
	testutil.Check(t, err)
	defer v.Close()
	if got := readFile(t, v, "big"); !bytes.Equal(got, big) {
		t.Fatalf("big reads back %d bytes that differ", len(got))
	}
	if got := readFile(t, v, "small"); string(got) != "hello" {
		t.Fatalf("small reads back %q", got)
	}
}

// TestS3PacksWithoutPadding: a new volume with data in S3 is made at the
// format that puts chunks back to back in its packs, and its objects hold
// exactly its chunks' bytes (at blob.Align boundaries, every
// content-defined chunk but a pack's last would bring up to 4 KiB of
// zeros along).
func TestS3PacksWithoutPadding(t *testing.T) {
	e := newS3Env(t)
	dir := filepath.Join(t.TempDir(), "store")
	testutil.Check(t, Init(dir, InitOptions{Meta: e.dsn, Data: e.dataURL("unpadded")}))
	v, err := Open(dir, quietLog())
	testutil.Check(t, err)
	if v.Config.Format != schema.FormatUnpaddedPacks || v.Config.PackAlign != 1 || blob.AlignmentOf(v.Blobs) != 1 {
		t.Fatalf("format %d, pack alignment %d, store alignment %d; want %d, 1, 1", v.Config.Format, v.Config.PackAlign, blob.AlignmentOf(v.Blobs), schema.FormatUnpaddedPacks)
	}
	files := map[string][]byte{}
	for i, n := range []int{3 << 20, 70000, 5000} {
		name := fmt.Sprintf("f%d", i)
		files[name] = testutil.SeededBytes(uint64(10+i), n)
		testutil.Check(t, writeFile(t, v, name, files[name], true))
	}
	var stored int64
	it, err := v.Meta.NewIter(schema.ChunkRange())
	testutil.Check(t, err)
	for ok := it.First(); ok; ok = it.Next() {
		c, err := schema.DecodeChunk(it.Value())
		testutil.Check(t, err)
		if !c.IsInline() {
			stored += int64(c.Stored)
		}
	}
	testutil.Check(t, it.Close())
	used, _, err := v.Blobs.Usage()
	testutil.Check(t, err)
	if used != stored {
		t.Errorf("the packs hold %d bytes for %d bytes of chunks", used, stored)
	}
	testutil.Check(t, v.Close())
	checkClean(t, dir)
	v, err = Open(dir, quietLog())
	testutil.Check(t, err)
	defer v.Close()
	for name, data := range files {
		if got := readFile(t, v, name); !bytes.Equal(got, data) {
			t.Errorf("%s reads back %d bytes that differ", name, len(got))
		}
	}
}

// TestS3StreamsLendTheirRuns: a streaming writer's runs go to S3 as
// packs of their own, uploaded from the runs' arrays (blob.Lender), while
// the arrays go back to the pool and are reused for the next runs; what
// the object store holds is the file, read back after a reopen without
// the local cache, and the volume checks clean. Small packs and runs make
// many of them; overwrites and fsyncs interleave.
func TestS3StreamsLendTheirRuns(t *testing.T) {
	e := newS3Env(t)
	tuneS3 = func(c *s3store.Config) { c.PackSize = 64 << 10 } // lends runs of 32 KiB or more
	t.Cleanup(func() { tuneS3 = nil })
	dir := filepath.Join(t.TempDir(), "store")
	testutil.Check(t, Init(dir, InitOptions{Meta: e.dsn, Data: e.dataURL("lend"), Chunking: "cdc:4K:16K:64K"}))
	v, err := OpenWith(dir, quietLog(), namespace.Options{StreamFlush: 256 << 10})
	testutil.Check(t, err)
	r := rand.New(rand.NewPCG(31, 32))
	_, h, err := v.NS.Create(vfs.Caller{}, 1, "f", 0o644, syscall.O_RDWR)
	testutil.Check(t, err)
	var ref []byte
	lentBefore := s3store.LentPacks()
	for len(ref) < 12<<20 {
		p := testutil.RandBytes(r, 1+r.IntN(200<<10))
		off := len(ref)
		if r.IntN(8) == 0 && len(ref) > 1<<20 {
			off = len(ref) - r.IntN(1<<20) // over bytes that may be in flight
		}
		_, err := v.NS.Write(h, int64(off), p)
		testutil.Check(t, err)
		if need := off + len(p); need > len(ref) {
			ref = append(ref, make([]byte, need-len(ref))...)
		}
		copy(ref[off:], p)
		if r.IntN(40) == 0 {
			testutil.Check(t, v.NS.Fsync(h, false))
		}
	}
	testutil.Check(t, v.NS.Fsync(h, false))
	testutil.Check(t, v.NS.Release(h))
	if lent := s3store.LentPacks() - lentBefore; lent < 10 {
		t.Fatalf("%d packs were lent runs, want many", lent)
	}
	testutil.Check(t, v.Close())
	checkClean(t, dir)
	testutil.Check(t, os.RemoveAll(filepath.Join(dir, S3Dir)))
	v, err = Open(dir, quietLog())
	testutil.Check(t, err)
	defer v.Close()
	if got := readFile(t, v, "f"); !bytes.Equal(got, ref) {
		t.Fatalf("f reads back %d bytes that differ from the %d written", len(got), len(ref))
	}
}

// TestS3InitRefusals: --data without --meta, credentials in the URL, a
// missing bucket, wrong credentials and a prefix holding another volume's
// packs are refused, each with a message saying so.
func TestS3InitRefusals(t *testing.T) {
	e := newS3Env(t)
	init := func(data string) error {
		return Init(filepath.Join(t.TempDir(), "store"), InitOptions{Meta: e.dsn + "&schema=" + fmt.Sprintf("r%d", len(data)%1000), Data: data})
	}
	if err := Init(filepath.Join(t.TempDir(), "s"), InitOptions{Data: e.dataURL("x")}); !errors.Is(err, ErrDataNeedsMeta) || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Errorf("--data without --meta: %v", err)
	}
	bad := fmt.Sprintf("s3://%s:%s@%s/p?endpoint=%s", s3test.AccessKey, s3test.SecretKey, e.s3.Bucket, e.s3.Endpoint)
	if err := init(bad); err == nil || strings.Contains(err.Error(), s3test.SecretKey) {
		t.Errorf("credentials in the URL: %v", err)
	}
	if err := init(fmt.Sprintf("s3://nobucket/p?endpoint=%s", e.s3.Endpoint)); err == nil || !strings.Contains(err.Error(), "nobucket") {
		t.Errorf("missing bucket: %v", err)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret")
	if err := init(e.dataURL("wrong")); err == nil || strings.Contains(err.Error(), "wrong-secret") {
		t.Errorf("wrong secret: %v", err)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	dir := filepath.Join(t.TempDir(), "first")
	testutil.Check(t, Init(dir, InitOptions{Meta: e.dsn + "&schema=first", Data: e.dataURL("taken")}))
	v, err := Open(dir, quietLog())
	testutil.Check(t, err)
	// Larger than SharedInlineMax: a small file's chunk would stay in its
	// record and leave no pack.
	testutil.Check(t, writeFile(t, v, "f", testutil.SeededBytes(7, 64<<10), true))
	testutil.Check(t, v.Close())
	if err := Init(filepath.Join(t.TempDir(), "second"), InitOptions{Meta: e.dsn + "&schema=second", Data: e.dataURL("taken")}); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Errorf("a prefix holding packs: %v", err)
	}
}

// TestPackAllocatorDisjoint: two metadata stores on one schema (two hosts)
// reserve pack numbers at once; no number is handed out twice and every
// range lies above the floor asked for.
func TestPackAllocatorDisjoint(t *testing.T) {
	srv := pgtest.Start(t)
	dsn := srv.CreateDB(t, "alloc")
	var allocs [2]packAllocator
	for i := range allocs {
		m, err := pgstore.Open(context.Background(), pgstore.Options{URL: dsn, Schema: "vol", Create: true})
		testutil.Check(t, err)
		t.Cleanup(func() { m.Close() })
		allocs[i] = packAllocator{m}
	}
	const per, workers = 50, 4
	var mu sync.Mutex
	seen := map[uint32]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := allocs[w%2]
			for i := range per {
				n, floor := uint32(1+i%16), uint32(w*100)
				first, err := a.Allocate(n, floor)
				if err != nil {
					errs <- err
					return
				}
				if first <= floor {
					errs <- fmt.Errorf("range from %d is not above %d", first, floor)
					return
				}
				mu.Lock()
				for k := first; k < first+n; k++ {
					if seen[k] {
						errs <- fmt.Errorf("pack number %d handed out twice", k)
					}
					seen[k] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestS3CommitWaitsForUpload: the ordered-mode rule across the two
// services. With the S3 server stopped, closing a file with new data
// (a commit without fsync, which PostgreSQL makes durable at once) must
// fail rather than commit metadata naming a pack that is only in memory;
// once the server is back, the same data commits, and a reopened volume
// whose store directory was deleted reads it back and checks clean.
func TestS3CommitWaitsForUpload(t *testing.T) {
	e := newS3Env(t)
	tuneS3 = func(c *s3store.Config) { c.Attempts = 1 } // fail soon
	t.Cleanup(func() { tuneS3 = nil })
	dir := filepath.Join(t.TempDir(), "store")
	testutil.Check(t, Init(dir, InitOptions{Meta: e.dsn, Data: e.dataURL("ordered"), Chunking: "fixed:64K"}))
	v, err := Open(dir, quietLog())
	testutil.Check(t, err)
	defer v.Close() // after a failure, Close may fail too: nothing to check
	before := testutil.SeededBytes(1, 1<<20)
	testutil.Check(t, writeFile(t, v, "before", before, false))

	e.s3.Stop()
	defer func() {
		if t.Failed() {
			e.s3.Restart(t)
		}
	}()
	during := testutil.SeededBytes(2, 1<<20)
	t0 := time.Now()
	err = writeFile(t, v, "during", during, false)
	t.Logf("write during the outage failed after %v: %v", time.Since(t0), err)
	if err == nil {
		t.Fatalf("a file with new data closed while the S3 server was down: its metadata committed before its pack was uploaded")
	}
	e.s3.Restart(t)
	a, err := v.NS.Lookup(1, "during")
	testutil.Check(t, err)
	h, err := v.NS.Open(a.Ino, syscall.O_WRONLY)
	testutil.Check(t, err)
	_, err = v.NS.Write(h, 0, during)
	testutil.Check(t, err)
	testutil.Check(t, v.NS.Flush(h))
	testutil.Check(t, v.NS.Release(h))
	testutil.Check(t, v.Close())
	testutil.Check(t, os.RemoveAll(filepath.Join(dir, S3Dir)))
	checkClean(t, dir)
	v2, err := Open(dir, quietLog())
	testutil.Check(t, err)
	defer v2.Close()
	if got := readFile(t, v2, "before"); !bytes.Equal(got, before) {
		t.Errorf("before: %d bytes that differ", len(got))
	}
	if got := readFile(t, v2, "during"); !bytes.Equal(got, during) {
		t.Errorf("during: %d bytes that differ", len(got))
	}
}

// TestS3DeadSpansInMetadata: the dead spans of a pack part freed are kept
// in the metadata store, so that a store directory lost (or another
// host's) knows them: fsck finds nothing to reclaim after the local
// directory is deleted. With the ledger in a local file it would report
// the freed span as orphan space.
func TestS3DeadSpansInMetadata(t *testing.T) {
	e := newS3Env(t)
	dir := filepath.Join(t.TempDir(), "store")
	testutil.Check(t, Init(dir, InitOptions{Meta: e.dsn, Data: e.dataURL("dead"), Chunking: "fixed:64K"}))
	v, err := Open(dir, quietLog())
	testutil.Check(t, err)
	defer v.Close()
	testutil.Check(t, writeFile(t, v, "f", testutil.SeededBytes(5, 128<<10), false))
	a, err := v.NS.Lookup(1, "f")
	testutil.Check(t, err)
	h, err := v.NS.Open(a.Ino, syscall.O_WRONLY)
	testutil.Check(t, err)
	_, err = v.NS.Write(h, 64<<10, testutil.SeededBytes(6, 64<<10)) // frees the old second chunk
	testutil.Check(t, err)
	testutil.Check(t, v.NS.Fsync(h, false))
	testutil.Check(t, v.NS.Release(h))
	testutil.Check(t, v.Close())

	lo, hi := schema.DeadRange()
	m, err := pgstore.Open(context.Background(), pgstore.Options{URL: e.dsn, Schema: v.MetaSchema})
	testutil.Check(t, err)
	it, err := m.NewIter(lo, hi)
	testutil.Check(t, err)
	records := 0
	for ok := it.First(); ok; ok = it.Next() {
		records++
	}
	testutil.Check(t, it.Close())
	m.Close()
	if records != 1 {
		t.Errorf("%d dead-span records in the metadata store, want 1 (the pack half freed)", records)
	}
	testutil.Check(t, os.RemoveAll(filepath.Join(dir, S3Dir)))
	if rep := checkClean(t, dir); len(rep.Problems) > 0 {
		t.Errorf("fsck after the store directory's S3 state was deleted: %+v", rep.Problems)
	}
}

// TestS3SmallChunksInline: on a shared volume a chunk of up to
// content.SharedInlineMax bytes is kept in its chunk record: closing a
// small file uploads nothing, a copy of it is deduplicated against the
// record, a read after a reopen without the local cache gets the bytes
// from the record, and fsck --verify-data checks them. Unlinking both
// copies deletes the record and no S3 request is made for it; a file of
// one whole 4 KiB block (what a block export's chunks are) goes to a
// pack.
func TestS3SmallChunksInline(t *testing.T) {
	e := newS3Env(t)
	counter := newS3Counter(t, e.s3.Endpoint)
	dir := filepath.Join(t.TempDir(), "store")
	data := fmt.Sprintf("s3://%s/%s?endpoint=%s&region=%s", e.s3.Bucket, "inline", counter.srv.URL, s3test.Region)
	testutil.Check(t, Init(dir, InitOptions{Meta: e.dsn, Data: data}))
	v, err := Open(dir, quietLog())
	testutil.Check(t, err)
	small := testutil.SeededBytes(8, content.SharedInlineMax)
	before := counter.read()
	testutil.Check(t, writeFile(t, v, "a", small, false))
	testutil.Check(t, writeFile(t, v, "b", small, true)) // fsync'd: durable with its commit
	if got := counter.read().minus(before); got.total() != 0 {
		t.Errorf("closing two small files made S3 requests %+v, want none", got)
	}
	c := chunkRecord(t, v, small)
	if !c.IsInline() || c.Refs != 2 || c.Segment != 0 {
		t.Errorf("the small files' chunk: inline %v, refs %d, segment %d; want inline, 2 refs (deduplicated), no segment", c.IsInline(), c.Refs, c.Segment)
	}
	big := testutil.SeededBytes(9, blob.Align)
	testutil.Check(t, writeFile(t, v, "big", big, false))
	if c := chunkRecord(t, v, big); c.IsInline() || counter.read().minus(before).puts == 0 {
		t.Errorf("a chunk of %d bytes was kept inline, or no pack was uploaded", len(big))
	}
	testutil.Check(t, v.Close())

	testutil.Check(t, os.RemoveAll(filepath.Join(dir, S3Dir)))
	rep := checkClean(t, dir)
	if rep.BytesVerified < int64(len(small)+len(big)) {
		t.Errorf("fsck verified %d bytes, want the inline chunk's too (%d at least)", rep.BytesVerified, len(small)+len(big))
	}
	v, err = Open(dir, quietLog())
	testutil.Check(t, err)
	defer v.Close()
	before = counter.read()
	for _, name := range []string{"a", "b"} {
		if got := readFile(t, v, name); !bytes.Equal(got, small) {
			t.Fatalf("%s reads back %d bytes that differ", name, len(got))
		}
	}
	if got := counter.read().minus(before); got.total() != 0 {
		t.Errorf("reading the small files made S3 requests %+v, want none", got)
	}
	testutil.Check(t, v.NS.Unlink(1, "a"))
	testutil.Check(t, v.NS.Unlink(1, "b"))
	if _, err := v.Meta.Get(schema.ChunkKey(schema.Sum(small))); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("the unlinked small files' chunk record: %v, want it deleted", err)
	}
	testutil.Check(t, v.Close())
	if got := counter.read().minus(before); got.total() != 0 {
		t.Errorf("unlinking the small files made S3 requests %+v, want none", got)
	}
	checkClean(t, dir)
}

// chunkRecord is the chunk record of data, stored as one chunk.
func chunkRecord(t *testing.T, v *Volume, data []byte) schema.Chunk {
	t.Helper()
	raw, err := v.Meta.Get(schema.ChunkKey(schema.Sum(data)))
	testutil.Check(t, err)
	c, err := schema.DecodeChunk(raw)
	testutil.Check(t, err)
	return c
}
