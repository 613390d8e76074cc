package fsck_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/volume"
)

// newOwnedEnv is newEnv on a volume of disk blocks, whose new blocks are
// owned by their extents (docs/BLOCK.md, "Owned blocks").
func newOwnedEnv(t *testing.T) *env {
	e := newEnv(t, volume.InitOptions{Chunking: "fixed:4K"})
	if !e.v.Engine.WritesOwnedBlocks() {
		t.Skip("this kind of volume keeps a chunk record for every block")
	}
	return e
}

// ownedExtent returns the first owned extent of the file at p.
func (e *env) ownedExtent(p string) schema.Extent {
	for _, x := range e.extents(p) {
		if x.Owned {
			return x.Extent
		}
	}
	e.t.Fatalf("%s has no owned extent", p)
	return schema.Extent{}
}

// damageBlock flips a bit of the block at owned extent x's place.
func (e *env) damageBlock(x schema.Extent) {
	f := testutil.Must(os.OpenFile(filepath.Join(e.dir, "chunks", fmt.Sprintf("seg-%08x", x.Hint.Segment)), os.O_RDWR, 0))
	b := make([]byte, 1)
	testutil.Must(f.ReadAt(b, int64(x.Hint.Offset)+100))
	b[0] ^= 0x20
	testutil.Must(f.WriteAt(b, int64(x.Hint.Offset)+100))
	testutil.Check(e.t, f.Close())
}

func TestOwnedBlocksClean(t *testing.T) {
	e := newOwnedEnv(t)
	r := e.check(true)
	if len(r.Problems) != 0 {
		t.Fatalf("%d problems on a volume used correctly", len(r.Problems))
	}
	st := e.v.Engine.Stats()
	if r.OwnedBlocks == 0 || r.OwnedBlocks != st.OwnedBlocks || r.BytesVerified != st.PhysicalBytes {
		t.Fatalf("counters %+v, stats %+v: want the owned blocks counted and verified", r, st)
	}
}

func TestOwnedBlockDamageRepaired(t *testing.T) {
	e := newOwnedEnv(t)
	e.segmentFiles()
	before := e.contents()
	e.damageBlock(e.ownedExtent("/solo"))
	want(t, e.check(true), fsck.KindBadHash, "/solo")

	rr := e.repair(true)
	if !slices.ContainsFunc(rr.Repairs, func(r fsck.Repaired) bool { return r.Kind == fsck.KindBadHash && r.Path == "/solo" }) {
		t.Fatal("no bad-hash repair of /solo")
	}
	if after := e.check(true); !rr.After.Clean() || len(after.Problems) != 0 {
		t.Fatalf("after repair: %d problems, then %v at the next open", len(rr.After.Problems), after.Kinds())
	}
	e.checkData(before, rr.Lost, repairCase{lost: []string{"/solo"}})
}

func TestOwnedTwiceReported(t *testing.T) {
	e := newOwnedEnv(t)
	x := e.ownedExtent("/solo")
	ino := e.ino["/d/b"]
	e.commit(schema.ExtentKey(ino, 1<<30), x.Encode())    // a second owner of the same block
	want(t, e.check(false), fsck.KindOwnedTwice, "/solo") // the later key of the two
}

// TestUnsettledBlocksNotDamage: an owned block written in place whose
// commit a crash lost (its intent record stands) is not damage to fsck,
// which counts it unverified; the same bytes without the record are
// damage; a repair (which opens the volume) takes the bytes as found.
func TestUnsettledBlocksNotDamage(t *testing.T) {
	e := newOwnedEnv(t)
	if !e.v.Engine.WritesInPlace() {
		t.Skip("this kind of volume writes no block in place")
	}
	e.segmentFiles()
	x := e.ownedExtent("/solo")
	var off, inZone int64 // the block's offset; the file's owned blocks in its zone (all of them)
	for _, p := range e.extents("/solo") {
		if p.Owned && p.Hint == x.Hint {
			off = p.Off
		}
		if p.Owned {
			inZone++
		}
	}
	before := e.contents()
	// What a transaction writing in place does before its commit.
	e.commit(schema.IntentKey(e.ino["/solo"], uint64(off)/schema.IntentZoneBytes), []byte{})
	loc := blob.Loc{Segment: x.Hint.Segment, Offset: x.Hint.Offset, Length: x.Length}
	written := testutil.SeededBytes(9, int(x.Length))
	testutil.Check(t, e.v.Blobs.(blob.Overwriter).Overwrite([]blob.Loc{loc}, [][]byte{written}))
	testutil.Check(t, e.v.Blobs.Sync())
	copy(before["/solo"][off:], written)

	r := e.check(true)
	if len(r.Problems) != 0 || r.UnsettledBlocks != inZone {
		t.Fatalf("%v, %d unsettled blocks; want no problem and %d (the zone's)", r.Kinds(), r.UnsettledBlocks, inZone)
	}
	e.commit(schema.IntentKey(e.ino["/solo"], uint64(off)/schema.IntentZoneBytes), nil)
	want(t, e.check(true), fsck.KindBadHash, "/solo")
	e.commit(schema.IntentKey(e.ino["/solo"], uint64(off)/schema.IntentZoneBytes), []byte{})

	rr := e.repair(true)
	if len(rr.Repairs) != 0 || len(rr.Lost) != 0 || !rr.After.Clean() {
		t.Fatalf("repair of a volume with an unsettled block: %d repairs, %d lost, after %v", len(rr.Repairs), len(rr.Lost), rr.After.Kinds())
	}
	e.checkData(before, nil, repairCase{})
}

// Blocks written over in place keep provisional names until the dedup
// pass hashes them (docs/BLOCK.md, "Blocks written in place, named
// later"): fsck verifies them by their check, also the record a copy of
// one gets under its name, and finds their damage.
func TestProvisionalNames(t *testing.T) {
	e := newEnv(t, volume.InitOptions{Chunking: "fixed:4K", NameLater: true})
	if !e.v.Engine.WritesInPlace() {
		t.Skip("this kind of volume writes no block in place")
	}
	fs := e.v.NS
	h := testutil.Must(fs.Open(e.ino["/solo"], syscall.O_RDWR))
	testutil.Must(fs.Write(h, 0, testutil.SeededBytes(5, 8192)))
	testutil.Check(t, fs.Release(h))
	src := testutil.Must(fs.Open(e.ino["/solo"], syscall.O_RDONLY))
	a, dst := must2(fs.Create(caller, e.ino["/d"], "named-copy", 0o644, syscall.O_WRONLY))
	e.ino["/d/named-copy"] = a.Ino
	if n := testutil.Must(fs.CopyFileRange(src, 4096, dst, 0, 4096)); n != 4096 {
		t.Fatalf("copied %d bytes", n)
	}
	testutil.Check(t, fs.Release(src))
	testutil.Check(t, fs.Release(dst))
	// Closed cleanly: no intent record is left, under which a block
	// written in place may hold any bytes.
	e.reopen()

	var named []schema.Extent
	for _, x := range e.extents("/solo") {
		if x.Hash.IsProvisional() {
			named = append(named, x.Extent)
		}
	}
	if len(named) != 2 {
		t.Fatalf("%d blocks of /solo have provisional names after two were written over in place", len(named))
	}
	if c := e.extents("/d/named-copy"); len(c) != 1 || c[0].Hash != named[1].Hash {
		t.Fatalf("the copy of the second block: %+v, want a reference to %s", c, named[1].Hash.Short())
	}
	if r := e.check(true); len(r.Problems) != 0 {
		t.Fatalf("%d problems with blocks named provisionally", len(r.Problems))
	}

	e.damageBlock(named[0])
	want(t, e.check(true), fsck.KindBadHash, "/solo")
}
