package content

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// tallySum tallies the given inodes (owned or not) and sums their chunks.
func (v *env) tallySum(files map[uint64]bool) ChunkUsage {
	v.t.Helper()
	tally := NewRefTally()
	for ino, owned := range files {
		if _, err := tally.AddFile(v.meta, ino, owned, false); err != nil {
			v.t.Fatal(err)
		}
	}
	u, err := tally.Sum(v.meta)
	if err != nil {
		v.t.Fatal(err)
	}
	return u
}

func TestTallyPartialChunkReferences(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K")})
	rng := rand.New(rand.NewPCG(81, 82))
	v.write(1, 0, testutil.RandBytes(rng, 128<<10)) // chunks A, B
	// An overwrite inside A splits its extent: A has two references, both
	// from inode 1, and a new 4 KiB chunk C is stored.
	v.write(1, 8<<10, testutil.RandBytes(rng, 4<<10))
	u := v.tallySum(map[uint64]bool{1: true})
	want := ChunkUsage{Chunks: 3, RawBytes: 132 << 10, PhysicalBytes: 132 << 10, ExclusiveChunks: 3, ExclusiveBytes: 132 << 10}
	if u != want {
		t.Fatalf("inode 1 alone: %+v, want %+v", u, want)
	}
	// Inode 2 takes 1 KiB from the middle of A: A is no longer inode 1's
	// alone, though inode 2 references a part inode 1 does not map.
	v.do(func(tx *Tx) error { _, err := tx.Copy(1, 20<<10, 2, 0, 1<<10); return err })
	u = v.tallySum(map[uint64]bool{1: true})
	want.ExclusiveChunks, want.ExclusiveBytes = 2, 68<<10
	if u != want {
		t.Fatalf("inode 1 with A shared: %+v, want %+v", u, want)
	}
	// Inode 2 staying behind (not owned) keeps A; owning both frees all.
	if u = v.tallySum(map[uint64]bool{1: true, 2: false}); u != want {
		t.Fatalf("inode 1 owned, 2 not: %+v, want %+v", u, want)
	}
	want.ExclusiveChunks, want.ExclusiveBytes = 3, 132<<10
	if u = v.tallySum(map[uint64]bool{1: true, 2: true}); u != want {
		t.Fatalf("both owned: %+v, want %+v", u, want)
	}
	u = v.tallySum(map[uint64]bool{2: true})
	if u.Chunks != 1 || u.PhysicalBytes != 64<<10 || u.ExclusiveBytes != 0 {
		t.Fatalf("inode 2 alone: %+v, want chunk A, shared", u)
	}
}

func TestTallyKeepsExtentsAndRecordSizes(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K")})
	rng := rand.New(rand.NewPCG(83, 84))
	v.write(5, 0, testutil.RandBytes(rng, 64<<10))
	v.write(5, 1<<20, testutil.RandBytes(rng, 10<<10)) // after a hole
	fe, err := NewRefTally().AddFile(v.meta, 5, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if fe.Mapped != 74<<10 || len(fe.Pieces) != 2 || fe.Pieces[1].Off != 1<<20 || fe.Pieces[1].Length != 10<<10 {
		t.Fatalf("extents %+v, mapped %d; want [0,64K) and [1M,1M+10K)", fe.Pieces, fe.Mapped)
	}
	if fe.RecordBytes <= 2*int64(schema.HashSize) {
		t.Errorf("record bytes %d, less than the two hashes they hold", fe.RecordBytes)
	}
}

func TestTallyReportsMissingChunkRecord(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K")})
	v.write(1, 0, testutil.RandBytes(rand.New(rand.NewPCG(85, 86)), 64<<10))
	for h := range v.allChunks() {
		b := v.meta.NewBatch()
		b.Delete(schema.ChunkKey(h))
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
	}
	tally := NewRefTally()
	if _, err := tally.AddFile(v.meta, 1, true, false); err != nil {
		t.Fatal(err)
	}
	if _, err := tally.Sum(v.meta); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Sum with a chunk record missing: %v, want ErrCorrupt", err)
	}
}
