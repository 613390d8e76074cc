package content

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// newNameLaterEnv is newInPlaceEnv whose blocks written in place are
// named later (provisional.go).
func newNameLaterEnv(t *testing.T) *env {
	t.Helper()
	needSegmentFiles(t, "blocks are written over in place only in segment files")
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), VerifyReads: true, OwnedBlocks: true, InPlace: true, NameLater: true, ReclaimInterval: time.Hour})
	if !v.e.nameLater {
		if _, durable := v.meta.(meta.CommitsDurable); durable {
			t.Skip("skipping: blocks are written in place only where commits are not durable one by one")
		}
		t.Fatal("the engine does not name blocks written in place later")
	}
	return v
}

// keepAll is a Retainer whose pin covers every inode and keeps nothing.
type keepAll struct{ keepNothing }

func (keepAll) Keeps(uint64) (bool, error) { return true, nil }

// names returns the names of ino's extents in file order.
func (v *env) names(ino uint64) []schema.Hash {
	var out []schema.Hash
	for _, x := range v.allExtents() {
		if x.ino == ino {
			out = append(out, x.Hash)
		}
	}
	return out
}

// TestNameLater: blocks written over owned blocks in place get
// provisional names (no hashing on the write's path), read back, and the
// dedup pass names them and then shares one that holds the bytes of
// another owned block. A pass under a pin names nothing.
func TestNameLater(t *testing.T) {
	v := newNameLaterEnv(t)
	r := rand.New(rand.NewPCG(7, 8))
	a, b, x := testutil.RandBytes(r, 4096), testutil.RandBytes(r, 4096), testutil.RandBytes(r, 4096)
	v.write(2, 0, slices.Concat(a, b))
	v.write(3, 0, x)
	for _, h := range v.names(2) {
		if h.IsProvisional() {
			t.Fatal("a block written fresh has a provisional name")
		}
	}
	places := v.ownedPlaces(2)
	v.write(2, 0, slices.Concat(x, a)) // both in place: x also lives in ino 3
	if got := v.ownedPlaces(2); got[0] != places[0] || got[4096] != places[4096] {
		t.Fatalf("places %v after the overwrite, %v before: not written in place", got, places)
	}
	for i, h := range v.names(2) {
		if seg, off, check, ok := h.Provisional(); !ok || seg != places[int64(i)*4096].Segment || off != places[int64(i)*4096].Offset || check != schema.CheckSum([][]byte{x, a}[i]) {
			t.Fatalf("block %d written in place is named %x, want the provisional name of its place and check", i, h[:])
		}
	}
	v.checkInvariants()
	v.checkContent(2, slices.Concat(x, a))

	v.e.SetRetainer(keepAll{})
	if res, err := v.e.DedupOwned(context.Background()); err != nil || res.Named != 0 || res.Shared != 0 {
		t.Fatalf("a pass while a pin covers every file: %+v, %v; want nothing named or shared", res, err)
	}
	v.e.SetRetainer(keepNothing{})

	res, err := v.e.DedupOwned(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Named != 2 || res.Shared != 1 {
		t.Fatalf("pass: %+v; want the 2 blocks named, and x shared with ino 3", res)
	}
	if got := v.names(2); got[0] != schema.Sum(x) || got[1] != schema.Sum(a) {
		t.Fatal("after the pass ino 2's extents are not named by their hashes")
	}
	v.checkInvariants()
	v.checkContent(2, slices.Concat(x, a))
	v.checkContent(3, x)
	if st := v.e.Stats(); st.OwnedBlocks != 1 || st.Chunks != 1 {
		t.Fatalf("after the pass: %+v; want x in one chunk record, a owned", st)
	}
}

// TestNameLaterCopy: a copy of a block with a provisional name gives it a
// record under that name; the block keeps the name through the pass, and
// both files read their bytes.
func TestNameLaterCopy(t *testing.T) {
	v := newNameLaterEnv(t)
	r := rand.New(rand.NewPCG(9, 10))
	v.write(2, 0, testutil.RandBytes(r, 4096))
	data := testutil.RandBytes(r, 4096)
	v.write(2, 0, data)
	name := v.names(2)[0]
	if !name.IsProvisional() {
		t.Fatal("the block written in place has no provisional name")
	}
	v.do(func(tx *Tx) error { _, err := tx.Copy(2, 0, 3, 0, 4096); return err })
	if _, ok := v.allChunks()[name]; !ok {
		t.Fatal("the copy gave the block no record under its provisional name")
	}
	if res, err := v.e.DedupOwned(context.Background()); err != nil || res.Named != 0 {
		t.Fatalf("pass: %+v, %v; want the copied block left with its name", res, err)
	}
	v.checkInvariants()
	v.checkContent(2, data)
	v.checkContent(3, data)
	// Written over again: the block is shared now, so the new bytes go
	// elsewhere and are hashed (a provisional name would name the old place).
	again := testutil.RandBytes(r, 4096)
	v.write(2, 0, again)
	if h := v.names(2)[0]; h != schema.Sum(again) {
		t.Fatalf("a block written over a shared one is named %x, want its hash", h[:8])
	}
	v.checkInvariants()
	v.checkContent(2, again)
	v.checkContent(3, data)
}
