package content

import "sync"

// BufPool recycles the large arrays of streaming writers' runs. A fresh
// array costs the runtime a pass that zeroes every byte (about a tenth of a
// streaming write's CPU); a recycled one is just overwritten.
//
// A run's array loses its committed head as the run is consumed, so what
// comes back is often a tail of the array handed out. Tails with at least
// Min bytes of capacity are recycled as they are.
type BufPool struct {
	size, min int
	p         sync.Pool
}

// NewBufPool returns a pool handing out arrays of capacity between min and
// size (fresh ones have size).
func NewBufPool(size, min int) *BufPool { return &BufPool{size: size, min: min} }

// Get returns an empty slice with a capacity of at least Min.
func (p *BufPool) Get() []byte {
	if b, ok := p.p.Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, p.size)
}

// Recycled returns an empty slice over an array given back (capacity at
// least Min), or nil when the pool holds none: for a caller that has a
// cheaper way than a fresh array of the pool's size.
func (p *BufPool) Recycled() []byte {
	if b, ok := p.p.Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return nil
}

// Put gives b's array back for reuse; the caller must not use it any more.
// Arrays with less capacity than Min, or more than the pool's size, are
// left to the garbage collector.
func (p *BufPool) Put(b []byte) {
	if cap(b) < p.min || cap(b) > p.size {
		return
	}
	b = b[:0]
	p.p.Put(&b)
}

// Min is the least capacity of a slice Get returns.
func (p *BufPool) Min() int { return p.min }
