package content

import (
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/testutil"
)

func TestSeekDataHole(t *testing.T) {
	// Layout with fixed 4K chunks: data [4K,12K), hole [12K,20K) (zeros
	// written), data [20K,24K), hole [24K,40K), data [40K,41K) then end.
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K")})
	r := rand.New(rand.NewPCG(49, 50))
	v.write(1, 4096, testutil.RandBytes(r, 8192))
	v.write(1, 12288, make([]byte, 8192))
	v.write(1, 20480, testutil.RandBytes(r, 4096))
	v.write(1, 40960, testutil.RandBytes(r, 1024))
	const K = 1024
	tests := []struct {
		off, data, hole int64
	}{
		{0, 4 * K, 0},
		{4*K - 1, 4 * K, 4*K - 1},
		{4 * K, 4 * K, 12 * K},
		{6 * K, 6 * K, 12 * K},
		{12*K - 1, 12*K - 1, 12 * K},
		{12 * K, 20 * K, 12 * K},
		{20 * K, 20 * K, 24 * K},
		{30 * K, 40 * K, 30 * K},
		{40*K + 500, 40*K + 500, 41 * K},
		{41 * K, -1, 41 * K},
		{1 << 40, -1, 1 << 40},
	}
	// Both through the store and through a transaction's batch.
	readers := map[string]func() (meta.Reader, func()){
		"store": func() (meta.Reader, func()) { return v.meta, func() {} },
		"batch": func() (meta.Reader, func()) { b := v.meta.NewBatch(); return b, func() { b.Close() } },
	}
	for name, open := range readers {
		rd, done := open()
		for _, tc := range tests {
			if d, err := v.e.SeekData(rd, 1, tc.off); err != nil || d != tc.data {
				t.Errorf("%s: SeekData(%d) = %d, %v; want %d", name, tc.off, d, err, tc.data)
			}
			if h, err := v.e.SeekHole(rd, 1, tc.off); err != nil || h != tc.hole {
				t.Errorf("%s: SeekHole(%d) = %d, %v; want %d", name, tc.off, h, err, tc.hole)
			}
		}
		done()
	}
	// Adjacent extents from different writes form one data region.
	v.write(1, 8192, testutil.RandBytes(r, 4096*3))
	if h, _ := v.e.SeekHole(v.meta, 1, 4096); h != 24*K {
		t.Errorf("SeekHole over adjacent extents = %d, want %d", h, 24*K)
	}
	// A transaction sees its own uncommitted punch.
	tx := v.begin()
	if _, err := tx.Punch(1, 0, 16*K); err != nil {
		t.Fatal(err)
	}
	if d, _ := v.e.SeekData(tx.Batch(), 1, 0); d != 16*K {
		t.Errorf("SeekData in tx after punch = %d, want %d", d, 16*K)
	}
	if d, _ := v.e.SeekData(v.meta, 1, 0); d != 4*K {
		t.Errorf("SeekData outside the tx = %d, want %d", d, 4*K)
	}
	tx.Abort()
}

// nextCounter is a meta.Reader that counts its iterators and their moves.
type nextCounter struct {
	meta.Reader
	iters, moves int
}

func (c *nextCounter) NewIter(lower, upper []byte) (meta.Iterator, error) {
	c.iters++
	it, err := c.Reader.NewIter(lower, upper)
	if err != nil {
		return nil, err
	}
	return &countedIter{Iterator: it, c: c}, nil
}

type countedIter struct {
	meta.Iterator
	c *nextCounter
}

func (it *countedIter) Next() bool { it.c.moves++; return it.Iterator.Next() }

// TestSeekHoleBeforeReadsOnlyBelowItsLimit: in a file stored without a
// hole, SeekHoleBefore answers its limit having read the extents below it
// only, where SeekHole reads them all.
func TestSeekHoleBeforeReadsOnlyBelowItsLimit(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K")})
	const blocks = 256
	v.write(1, 0, testutil.RandBytes(rand.New(rand.NewPCG(9, 9)), blocks*4096))
	r := &nextCounter{Reader: v.meta}
	h, err := v.e.SeekHoleBefore(r, 1, 8*4096, 16*4096)
	if err != nil || h != 16*4096 {
		t.Fatalf("SeekHoleBefore(8 blocks, 16 blocks) = %d, %v; want %d", h, err, 16*4096)
	}
	if r.moves > 10 {
		t.Errorf("SeekHoleBefore over 8 blocks moved %d times", r.moves)
	}
	r.moves = 0
	if h, err := v.e.SeekHole(r, 1, 8*4096); err != nil || h != blocks*4096 {
		t.Fatalf("SeekHole(8 blocks) = %d, %v; want %d", h, err, blocks*4096)
	}
	if r.moves < blocks-8-1 {
		t.Errorf("SeekHole moved %d times over %d extents: the counter counts nothing", r.moves, blocks-8)
	}
}
