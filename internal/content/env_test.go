package content

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/chunker"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil/sharedtest"
)

// env is a content engine on real stores in a temporary directory, of
// the kind DOPPEL_TEST_META picks (sharedtest): a Pebble metadata store
// and segment files by default, as an embedded volume has them; a
// PostgreSQL schema, and segment files or an S3 prefix, with the shared
// kinds.
type env struct {
	t      testing.TB
	dir    string
	stores sharedtest.Stores
	meta   meta.Store
	blobs  blob.Store
	e      *Engine
	cfg    Config
}

func newEnv(t testing.TB, cfg Config) *env {
	t.Helper()
	v := &env{t: t, dir: t.TempDir(), cfg: cfg}
	v.stores = sharedtest.NewStores(v.dir)
	v.meta, v.blobs = v.stores.Open(t)
	v.e = v.newEngine()
	t.Cleanup(v.close)
	return v
}

// needSegmentFiles skips a test that needs the chunk data in segment
// files, saying why, when DOPPEL_TEST_META=postgres+s3 puts it in S3.
func needSegmentFiles(t testing.TB, why string) {
	t.Helper()
	if sharedtest.S3() {
		t.Skip("skipping: " + why)
	}
}

func (v *env) newEngine() *Engine {
	v.t.Helper()
	e, err := New(v.meta, v.blobs, v.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		v.t.Fatal(err)
	}
	return e
}

// reopen replaces the engine by a new one on the same stores: its chunk
// cache is empty and its counters come from the metadata.
func (v *env) reopen() {
	v.t.Helper()
	if err := v.e.Close(); err != nil {
		v.t.Fatal(err)
	}
	v.e = v.newEngine()
}

func (v *env) close() {
	if v.e != nil {
		v.e.Close()
		v.e = nil
	}
	v.blobs.Close()
	v.meta.Close()
}

// policy parses a chunking policy or fails the test.
func policy(t testing.TB, s string) chunker.Policy {
	t.Helper()
	p, err := chunker.ParsePolicy(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// write makes data ino's content at off the way the namespace layer flushes
// a buffered run: Prepare everything (final), then one transaction.
// prepare cuts data at ino's offset off, plans writes in place and
// stores the chunks, as the namespace does before a commit.
func (v *env) prepare(ino uint64, off int64, data []byte) []*Prepared {
	v.t.Helper()
	ps, n := Cut(v.e.chunk, off, data, true)
	v.e.PlanInPlace(ino, ps)
	if err := v.e.Store(ps); err != nil {
		v.t.Fatal(err)
	}
	if n != len(data) {
		v.t.Fatalf("final Prepare consumed %d of %d bytes", n, len(data))
	}
	return ps
}

func (v *env) write(ino uint64, off int64, data []byte) int64 {
	v.t.Helper()
	ps := v.prepare(ino, off, data)
	tx := v.begin()
	mapped, err := tx.WriteChunks(ino, ps)
	if err != nil {
		tx.Abort()
		v.t.Fatal(err)
	}
	v.commit(tx)
	return mapped
}

func (v *env) begin() *Tx {
	v.t.Helper()
	tx, err := v.e.Begin()
	if err != nil {
		v.t.Fatal(err)
	}
	return tx
}

func (v *env) commit(tx *Tx) {
	v.t.Helper()
	if err := tx.Commit(false); err != nil {
		v.t.Fatal(err)
	}
}

// do runs fn in one transaction and commits it.
func (v *env) do(fn func(tx *Tx) error) {
	v.t.Helper()
	tx := v.begin()
	if err := fn(tx); err != nil {
		tx.Abort()
		v.t.Fatal(err)
	}
	v.commit(tx)
}

// read returns n bytes of ino from off.
func (v *env) read(ino uint64, off int64, n int) []byte {
	v.t.Helper()
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = 0xa5 // ReadAt must overwrite holes too
	}
	if err := v.e.ReadAt(ino, off, buf); err != nil {
		v.t.Fatalf("ReadAt(%d, %d, %d): %v", ino, off, n, err)
	}
	return buf
}

// checkContent compares ino's content with want.
func (v *env) checkContent(ino uint64, want []byte) {
	v.t.Helper()
	got := v.read(ino, 0, len(want))
	if i := firstDiff(got, want); i >= 0 {
		v.t.Fatalf("inode %d differs from reference at byte %d of %d: got %#x, want %#x",
			ino, i, len(want), got[i], want[i])
	}
}

func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// extentRec is an extent as found in the metadata.
type extentRec struct {
	ino uint64
	off int64
	schema.Extent
}

// allExtents returns every extent record of the volume, in key order.
func (v *env) allExtents() []extentRec {
	v.t.Helper()
	it, err := v.meta.NewIter([]byte{'e'}, []byte{'e' + 1})
	if err != nil {
		v.t.Fatal(err)
	}
	defer it.Close()
	var out []extentRec
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		off, err := schema.ExtentOffset(k)
		if err != nil {
			v.t.Fatalf("extent key %x: %v", k, err)
		}
		x, err := schema.DecodeExtent(it.Value())
		if err != nil {
			v.t.Fatalf("extent %x: %v", k, err)
		}
		out = append(out, extentRec{ino: binary.BigEndian.Uint64(k[1:9]), off: off, Extent: x})
	}
	return out
}

// allChunks returns every chunk record of the volume.
func (v *env) allChunks() map[schema.Hash]schema.Chunk {
	v.t.Helper()
	lo, hi := schema.ChunkRange()
	it, err := v.meta.NewIter(lo, hi)
	if err != nil {
		v.t.Fatal(err)
	}
	defer it.Close()
	out := map[schema.Hash]schema.Chunk{}
	for ok := it.First(); ok; ok = it.Next() {
		h, err := schema.ChunkHash(it.Key())
		if err != nil {
			v.t.Fatal(err)
		}
		c, err := schema.DecodeChunk(it.Value())
		if err != nil {
			v.t.Fatalf("chunk %x: %v", h[:8], err)
		}
		out[h] = c
	}
	return out
}

// namesBytes reports whether chunk name h names data, stored at loc: its
// hash, or a provisional name of loc and data's check.
func namesBytes(h schema.Hash, loc blob.Loc, data []byte) bool {
	if seg, off, check, ok := h.Provisional(); ok {
		return seg == loc.Segment && off == loc.Offset && check == schema.CheckSum(data)
	}
	return schema.Sum(data) == h
}

// checkInvariants verifies the bookkeeping that the volume's space
// accounting and reclaiming rest on:
//   - every chunk's Refs is the number of extents naming it, and every
//     extent names a chunk that exists and is long enough;
//   - the extents of an inode do not overlap;
//   - the committed Stats (in memory and in the metadata) equal what the
//     records add up to.
func (v *env) checkInvariants() {
	v.t.Helper()
	exts := v.allExtents()
	chunks := v.allChunks()

	refs := map[schema.Hash]uint64{}
	var logical, ownedBytes int64
	owners := map[blob.Loc]extentRec{} // owned blocks by location (owned.go)
	for i, x := range exts {
		logical += int64(x.Length)
		if x.Owned {
			loc := blob.Loc{Segment: x.Hint.Segment, Offset: x.Hint.Offset}
			if c, ok := chunks[x.Hash]; ok && c.Segment == loc.Segment && c.Offset == loc.Offset {
				refs[x.Hash]++ // promoted: the owner counts in the record
				continue
			}
			if o, dup := owners[loc]; dup {
				v.t.Fatalf("inode %d: extent at %d owns segment %d offset %d, which inode %d's extent at %d owns too",
					x.ino, x.off, loc.Segment, loc.Offset, o.ino, o.off)
			}
			owners[loc] = x
			ownedBytes += int64(x.Length)
			loc.Length = x.Length
			if data, err := v.blobs.Read(loc, make([]byte, x.Length)); err != nil || !namesBytes(x.Hash, loc, data) {
				v.t.Fatalf("inode %d: extent at %d owns segment %d offset %d, whose bytes are not chunk %x (%v)",
					x.ino, x.off, loc.Segment, loc.Offset, x.Hash[:8], err)
			}
			continue
		}
		refs[x.Hash]++
		if i > 0 && exts[i-1].ino == x.ino {
			if prev := exts[i-1]; prev.off+int64(prev.Length) > x.off {
				v.t.Fatalf("inode %d: extent at %d (len %d) overlaps extent at %d", x.ino, prev.off, prev.Length, x.off)
			}
		}
		c, ok := chunks[x.Hash]
		if !ok {
			v.t.Fatalf("inode %d: extent at %d names missing chunk %x", x.ino, x.off, x.Hash[:8])
		}
		if uint64(x.ChunkOff)+uint64(x.Length) > uint64(c.Raw) {
			v.t.Fatalf("inode %d: extent at %d [%d+%d] reaches past chunk %x of %d bytes",
				x.ino, x.off, x.ChunkOff, x.Length, x.Hash[:8], c.Raw)
		}
	}
	physical, raw := ownedBytes, ownedBytes
	for h, c := range chunks {
		if c.Refs != refs[h] {
			v.t.Fatalf("chunk %x: Refs = %d, but %d extents name it", h[:8], c.Refs, refs[h])
		}
		if seg, off, check, ok := h.Provisional(); ok && (c.IsInline() || c.Segment != seg || c.Offset != off || c.Check != check) {
			v.t.Fatalf("chunk %x: its record (segment %d offset %d check %x) is not at the place its provisional name names", h[:8], c.Segment, c.Offset, c.Check)
		}
		if o, ok := owners[blob.Loc{Segment: c.Segment, Offset: c.Offset}]; ok && !c.IsInline() {
			v.t.Fatalf("chunk %x's record names the block inode %d's extent at %d owns", h[:8], o.ino, o.off)
		}
		physical += int64(c.Stored)
		raw += int64(c.Raw)
	}

	st := v.e.Stats()
	want := schema.Stats{LogicalBytes: logical, PhysicalBytes: physical, RawBytes: raw, Chunks: int64(len(chunks)), Inodes: st.Inodes,
		OwnedBlocks: int64(len(owners))}
	if st != want {
		v.t.Fatalf("engine stats %+v, records add up to %+v", st, want)
	}
	if b, err := v.meta.Get(schema.KeyStats); err == nil {
		stored, err := schema.DecodeStats(b)
		if err != nil {
			v.t.Fatal(err)
		}
		if stored != st {
			v.t.Fatalf("stored stats %+v, engine stats %+v", stored, st)
		}
	} else if !errors.Is(err, meta.ErrNotFound) || st != (schema.Stats{}) {
		v.t.Fatalf("stored stats: %v (engine stats %+v)", err, st)
	}
}

// usage returns the bytes the blob store occupies on the host.
func (v *env) usage() int64 {
	v.t.Helper()
	n, _, err := v.blobs.Usage()
	if err != nil {
		v.t.Fatal(err)
	}
	return n
}

// waitFor polls cond for up to 5 s; the reclaimer runs every 500 ms.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// textBytes returns n bytes of compressible, non-repeating text.
func textBytes(r *rand.Rand, n int) []byte {
	words := []string{"alpha ", "beta ", "gamma ", "delta ", "epsilon ", "zeta ", "eta ", "theta ", "\n"}
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		fmt.Fprint(&b, r.IntN(1000))
	}
	return b.Bytes()[:n]
}
