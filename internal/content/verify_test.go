package content

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// segmentPath returns the file of a chunk's segment.
func (v *env) segmentPath(c schema.Chunk) string {
	return filepath.Join(v.dir, "chunks", blobSegName(c.Segment))
}

func blobSegName(num uint32) string {
	const hexdigits = "0123456789abcdef"
	b := []byte("seg-00000000")
	for i := 11; i >= 4; i-- {
		b[i] = hexdigits[num&15]
		num >>= 4
	}
	return string(b)
}

// flipByte damages one stored byte of chunk c.
func (v *env) flipByte(c schema.Chunk, at int64) {
	v.t.Helper()
	f, err := os.OpenFile(v.segmentPath(c), os.O_RDWR, 0)
	if err != nil {
		v.t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	off := int64(c.Offset) + at
	if _, err := f.ReadAt(b, off); err != nil {
		v.t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, off); err != nil {
		v.t.Fatal(err)
	}
}

func TestVerifyReadsDetectsCorruption(t *testing.T) {
	needSegmentFiles(t, "damages segment files; the chunk data is in S3")
	v := newEnv(t, Config{Chunking: policy(t, "fixed:16K"), VerifyReads: true})
	r := rand.New(rand.NewPCG(41, 42))
	data := testutil.RandBytes(r, 64<<10)
	v.write(1, 0, data)
	if err := v.e.Sync(); err != nil {
		t.Fatal(err)
	}

	// Damage the chunk holding file bytes [16K, 32K).
	exts, err := Extents(v.meta, 1, 20000, 20001)
	if err != nil || len(exts) != 1 {
		t.Fatalf("Extents: %v, %v", exts, err)
	}
	c := v.allChunks()[exts[0].Hash]
	v.flipByte(c, 1234)

	// The running engine may have the chunk cached; a new one must go to
	// the blob store.
	v.reopen()
	buf := make([]byte, len(data))
	err = v.e.ReadAt(1, 0, buf)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadAt over damaged chunk: err = %v, want ErrCorrupt", err)
	}
	// Undamaged chunks still read.
	if got := v.read(1, 0, 16<<10); !bytes.Equal(got, data[:16<<10]) {
		t.Error("undamaged chunk reads wrong")
	}
	if got := v.read(1, 32<<10, 32<<10); !bytes.Equal(got, data[32<<10:]) {
		t.Error("undamaged chunks read wrong")
	}
	// A damaged chunk is not cached as good: reading it again still fails.
	if err := v.e.ReadAt(1, 20000, make([]byte, 10)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("second read of damaged chunk: err = %v, want ErrCorrupt", err)
	}
}

// TestReadsVerifyChecks: new chunk records carry a check of the bytes,
// which reads verify; damage under a check, or under an old record
// without one (verified by the hash), is reported; a wrong check over
// intact bytes does not make them unreadable.
func TestReadsVerifyChecks(t *testing.T) {
	needSegmentFiles(t, "damages segment files; the chunk data is in S3")
	v := newEnv(t, Config{Chunking: policy(t, "fixed:16K"), VerifyReads: true})
	data := testutil.RandBytes(rand.New(rand.NewPCG(47, 48)), 3*16<<10)
	v.write(1, 0, data)
	chunks := v.allChunks()
	piece := func(i int) []byte { return data[i*16<<10 : (i+1)*16<<10] }
	recs := make([]schema.Chunk, 3)
	hashes := make([]schema.Hash, 3)
	for i := range 3 {
		hashes[i] = schema.Sum(piece(i))
		c, ok := chunks[hashes[i]]
		if !ok || !c.HasCheck || c.Check != schema.CheckSum(piece(i)) {
			t.Fatalf("chunk %d: record %+v (found %v), want a check of %016x", i, c, ok, schema.CheckSum(piece(i)))
		}
		recs[i] = c
	}
	legacy := recs[0]
	legacy.Check, legacy.HasCheck = 0, false
	v.setChunk(hashes[0], legacy) // as written before checks existed
	wrong := recs[1]
	wrong.Check++
	v.setChunk(hashes[1], wrong)
	v.reopen()
	v.checkContent(1, data)

	v.flipByte(recs[0], 100)
	v.flipByte(recs[2], 200)
	v.reopen()
	for i, want := range []bool{true, false, true} {
		err := v.e.ReadAt(1, int64(i*16<<10), make([]byte, 16<<10))
		if got := errors.Is(err, ErrCorrupt); got != want {
			t.Errorf("chunk %d: read error %v, want damage reported: %v", i, err, want)
		}
	}
}

func TestUnverifiedReadsReturnDamage(t *testing.T) {
	needSegmentFiles(t, "damages segment files; the chunk data is in S3")
	// Without VerifyReads a flipped byte goes unnoticed (documents the cost
	// of turning verification off, and that the test damage is real).
	v := newEnv(t, Config{Chunking: policy(t, "fixed:16K")})
	data := testutil.RandBytes(rand.New(rand.NewPCG(43, 44)), 16<<10)
	v.write(1, 0, data)
	for _, c := range v.allChunks() {
		v.flipByte(c, 5)
	}
	v.reopen()
	got := v.read(1, 0, len(data))
	if firstDiff(got, data) != 5 {
		t.Errorf("first difference at %d, want 5", firstDiff(got, data))
	}
}

func TestCorruptCompressedChunk(t *testing.T) {
	needSegmentFiles(t, "damages segment files; the chunk data is in S3")
	// Damage to compressed bytes fails decompression or the hash check.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:16K"), Compression: "zstd", VerifyReads: true})
	data := textBytes(rand.New(rand.NewPCG(45, 46)), 16<<10)
	v.write(1, 0, data)
	for _, c := range v.allChunks() {
		if c.Comp != schema.CompZstd {
			t.Fatalf("text chunk not compressed")
		}
		v.flipByte(c, int64(c.Stored)/2)
	}
	v.reopen()
	if err := v.e.ReadAt(1, 0, make([]byte, len(data))); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadAt: err = %v, want ErrCorrupt", err)
	}
}

func TestTruncatedSegment(t *testing.T) {
	needSegmentFiles(t, "damages segment files; the chunk data is in S3")
	// A segment shorter than a chunk needs (lost tail after a crash) is an
	// error wrapping ErrCorrupt, never zeros.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:16K")})
	data := testutil.RandBytes(rand.New(rand.NewPCG(47, 48)), 32<<10)
	v.write(1, 0, data)
	if err := v.e.Sync(); err != nil {
		t.Fatal(err)
	}
	var last schema.Chunk
	for _, c := range v.allChunks() {
		if c.Offset >= last.Offset {
			last = c
		}
	}
	if err := os.Truncate(v.segmentPath(last), int64(last.Offset)+100); err != nil {
		t.Fatal(err)
	}
	v.reopen()
	if err := v.e.ReadAt(1, 0, make([]byte, len(data))); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadAt: err = %v, want ErrCorrupt", err)
	}
}

func TestOverlappingExtentsAreDamageNotAPanic(t *testing.T) {
	// An extent key damaged into starting inside the extent before it.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:16K"), VerifyReads: true})
	data := testutil.RandBytes(rand.New(rand.NewPCG(61, 62)), 64<<10)
	v.write(1, 0, data)
	second := v.allExtents()[1]
	b := v.meta.NewBatch()
	if err := b.Delete(schema.ExtentKey(1, second.off)); err != nil {
		t.Fatal(err)
	}
	if err := b.Set(schema.ExtentKey(1, second.off-300), second.Extent.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	b.Close()
	var re *RecordError
	if err := v.e.ReadAt(1, 0, make([]byte, len(data))); !errors.As(err, &re) || re.Ino != 1 {
		t.Fatalf("ReadAt over overlapping extents: err = %v, want a RecordError for inode 1", err)
	}
}
