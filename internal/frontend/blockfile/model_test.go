package blockfile_test

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/frontend/nbd"
	"github.com/doppelfs/doppel/internal/testutil"
)

var (
	modelSeed = flag.Uint64("blockfile.seed", 0, "seed of TestModel (0: from the clock)")
	modelOps  = flag.Int("blockfile.ops", 2000, "operations of TestModel")
)

// TestModel applies random writes (some all zero), trims, zeroes (with and
// without NO_HOLE), flushes and reads to a file of a real volume and to an
// image in memory, and compares every read and, after each step, the
// block status: a hole must read as zeros.
func TestModel(t *testing.T) {
	seed := *modelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -blockfile.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	_, f := openFile(t, nil)
	size := f.Size()
	model := make([]byte, size)
	span := func() (int64, int64) {
		max := int64(1 << (12 + rng.IntN(9))) // 4 KiB .. 1 MiB
		off := rng.Int64N(size)
		if rng.IntN(2) == 0 {
			off &^= 4095
		}
		return off, min(1+rng.Int64N(max), size-off)
	}
	for step := range *modelOps {
		off, n := span()
		switch op := rng.IntN(10); {
		case op < 4:
			p := testutil.RandBytes(rng, int(n))
			if rng.IntN(3) == 0 {
				clear(p)
			}
			testutil.Check(t, f.WriteAt(p, off, rng.IntN(8) == 0))
			copy(model[off:], p)
		case op < 5:
			testutil.Check(t, f.Trim(off, n))
			clear(model[off : off+n])
		case op < 6:
			testutil.Check(t, f.Zero(off, n, rng.IntN(2) == 0))
			clear(model[off : off+n])
		case op < 7:
			testutil.Check(t, f.Flush())
		default:
			got := make([]byte, n)
			if _, err := f.ReadAt(got, off); err != nil || !bytes.Equal(got, model[off:off+n]) {
				t.Fatalf("step %d: read %d+%d differs from the model (err %v)", step, off, n, err)
			}
		}
		if step%50 == 0 {
			checkHoles(t, f, model, step)
		}
	}
	checkHoles(t, f, model, *modelOps)
}

// checkHoles requires every extent block status calls a hole to be zeros
// in the model, and the extents to cover the file.
func checkHoles(t *testing.T, f interface {
	BlockStatus(off, length int64) ([]nbd.Extent, error)
}, model []byte, step int) {
	t.Helper()
	for pos := int64(0); pos < int64(len(model)); {
		ext, err := f.BlockStatus(pos, int64(len(model))-pos)
		testutil.Check(t, err)
		if len(ext) == 0 {
			t.Fatalf("step %d: no extent at %d", step, pos)
		}
		for _, e := range ext {
			if e.Flags&nbd.ExtentHole != 0 && bytes.ContainsFunc(model[pos:pos+e.Length], func(r rune) bool { return r != 0 }) {
				t.Fatalf("step %d: %d+%d is reported a hole but holds data", step, pos, e.Length)
			}
			pos += e.Length
		}
	}
}
