package content

import (
	"bytes"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/blob/s3store"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// s3Engine is an engine on a Pebble store and an S3 store with small
// packs, a tiny retire grace and no background compaction: the test
// runs the passes.
func s3Engine(t *testing.T) (*Engine, *s3store.Store, func() *Engine) {
	srv := s3test.Start(t)
	dir := t.TempDir()
	m, err := meta.OpenPebble(filepath.Join(dir, "meta"))
	testutil.Check(t, err)
	t.Cleanup(func() { m.Close() })
	s, err := s3store.Open(s3store.Config{
		Endpoint: srv.Endpoint, Region: s3test.Region, Bucket: srv.Bucket, Prefix: "late",
		Credentials: s3store.Credentials{AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey},
		Dir:         filepath.Join(dir, "s3"), PackSize: 64 << 10, RetireGrace: time.Millisecond, CacheBytes: -1,
	})
	testutil.Check(t, err)
	t.Cleanup(func() { s.Close() })
	open := func() *Engine {
		e, err := New(m, s, Config{Chunking: policy(t, "fixed:4K"), VerifyReads: true, Compact: CompactConfig{Interval: -1}},
			slog.New(slog.NewTextHandler(io.Discard, nil)))
		testutil.Check(t, err)
		_, err = e.Recover()
		testutil.Check(t, err)
		return e
	}
	return open(), s, open
}

// TestCompactionMovesLateChunks: chunks stored into a pack before it was
// compacted, whose transactions commit only later, keep their data. X
// commits between the pass's scan and its move (a late chunk, moved by
// the pass's own transaction); Y commits after the pack was retired (and
// is stored again). The pack is then deleted, and both read back through
// a fresh engine. Without either mechanism, the file's record would name
// the deleted pack.
func TestCompactionMovesLateChunks(t *testing.T) {
	e, s, reopen := s3Engine(t)
	defer func() { e.Close() }()
	garbage, err := s.Put(testutil.SeededBytes(1, 56<<10))
	testutil.Check(t, err)
	x, y := testutil.SeededBytes(2, 4096), testutil.SeededBytes(3, 4096)
	px, _, err := e.Prepare(0, x, true)
	testutil.Check(t, err)
	py, _, err := e.Prepare(0, y, true)
	testutil.Check(t, err)
	testutil.Check(t, s.Sync()) // seals and uploads the pack
	pack := garbage.Segment
	if px[0].loc.Segment != pack || py[0].loc.Segment != pack {
		t.Fatalf("X in pack %d, Y in %d; want both in %d", px[0].loc.Segment, py[0].loc.Segment, pack)
	}
	testutil.Check(t, s.Free(garbage))

	commit := func(ino uint64, ps []*Prepared) {
		tx, err := e.Begin()
		testutil.Check(t, err)
		if _, err := tx.WriteChunks(ino, ps); err != nil {
			tx.Abort()
			t.Fatal(err)
		}
		testutil.Check(t, tx.Commit(false))
	}
	afterCompactScan = func() { commit(1, px) }
	defer func() { afterCompactScan = nil }()
	cfg := CompactConfig{MaxLive: 0.9, MinReclaim: -1}
	res, err := e.Compact(cfg, false)
	testutil.Check(t, err)
	afterCompactScan = nil
	if res.Rewritten != 1 || res.Moved != 1 {
		t.Fatalf("pass: %+v; want pack %d rewritten with X moved", res, pack)
	}
	commit(2, py)
	time.Sleep(5 * time.Millisecond)
	if res, err = e.Compact(cfg, false); err != nil || res.Deleted != 1 {
		t.Fatalf("second pass: %+v, %v; want the retired pack deleted", res, err)
	}
	if _, err := s.SegmentSize(pack); err == nil {
		t.Fatalf("pack %d still exists", pack)
	}
	testutil.Check(t, e.Close())
	e = reopen()
	for ino, want := range map[uint64][]byte{1: x, 2: y} {
		got := make([]byte, len(want))
		if err := e.ReadAt(ino, 0, got); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("inode %d after its pack was compacted and deleted: %v (equal %v)", ino, err, bytes.Equal(got, want))
		}
	}
}

// TestHintsIntoCompactedPacks: on an S3 store, extents carry location
// hints too. Compaction moves a chunk out of a sparse pack and the pack
// is deleted: the file's extent still names the old pack, the store knows
// it is gone, so reads pass over the hint (no GET of the deleted pack) and
// go by the chunk's record, and the file reads back right, before and
// after a reopen.
func TestHintsIntoCompactedPacks(t *testing.T) {
	e, s, reopen := s3Engine(t)
	defer func() { e.Close() }()
	garbage, err := s.Put(testutil.SeededBytes(4, 56<<10))
	testutil.Check(t, err)
	x := testutil.SeededBytes(5, 4096)
	px, _, err := e.Prepare(0, x, true)
	testutil.Check(t, err)
	tx, err := e.Begin()
	testutil.Check(t, err)
	if _, err := tx.WriteChunks(1, px); err != nil {
		tx.Abort()
		t.Fatal(err)
	}
	testutil.Check(t, tx.Commit(false))
	testutil.Check(t, s.Sync())
	pack := garbage.Segment
	pieces, err := Extents(e.meta, 1, 0, 4096)
	testutil.Check(t, err)
	if len(pieces) != 1 || !pieces[0].Hint.Has() || pieces[0].Hint.Segment != pack {
		t.Fatalf("extents %+v; want one hinted into pack %d", pieces, pack)
	}
	if _, ok := e.hintedLoc(pieces[0]); !ok {
		t.Fatal("a hint into a pack that exists is passed over")
	}
	testutil.Check(t, s.Free(garbage))
	cfg := CompactConfig{MaxLive: 0.9, MinReclaim: -1}
	if res, err := e.Compact(cfg, false); err != nil || res.Rewritten != 1 {
		t.Fatalf("pass: %+v, %v; want pack %d rewritten", res, err, pack)
	}
	got := make([]byte, len(x))
	if err := e.ReadAt(1, 0, got); err != nil || !bytes.Equal(got, x) {
		t.Fatalf("read through a hint into a retired pack: %v (equal %v)", err, bytes.Equal(got, x))
	}
	time.Sleep(5 * time.Millisecond)
	if res, err := e.Compact(cfg, false); err != nil || res.Deleted != 1 {
		t.Fatalf("second pass: %+v, %v; want the retired pack deleted", res, err)
	}
	if !s.Gone(pack) {
		t.Fatalf("the store deleted pack %d and does not know it is gone", pack)
	}
	for round := range 2 {
		pieces, err := Extents(e.meta, 1, 0, 4096)
		testutil.Check(t, err)
		if len(pieces) != 1 || pieces[0].Hint.Segment != pack {
			t.Fatalf("extents %+v; want the stale hint into pack %d kept", pieces, pack)
		}
		if _, ok := e.hintedLoc(pieces[0]); ok {
			t.Fatalf("round %d: a hint into deleted pack %d is still trusted", round, pack)
		}
		clear(got)
		if err := e.ReadAt(1, 0, got); err != nil || !bytes.Equal(got, x) {
			t.Fatalf("round %d: read after the pack was deleted: %v (equal %v)", round, err, bytes.Equal(got, x))
		}
		testutil.Check(t, e.Close())
		e = reopen()
	}
}
