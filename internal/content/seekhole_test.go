package content

import (
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/testutil"
)

// nextCounter is a meta.Reader that counts its iterators' moves.
type nextCounter struct {
	meta.Reader
	moves int
}

func (c *nextCounter) NewIter(lower, upper []byte) (meta.Iterator, error) {
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
