package content

import "testing"

func TestBufPool(t *testing.T) {
	p := NewBufPool(100, 60)
	b := p.Get()
	if len(b) != 0 || cap(b) != 100 {
		t.Fatalf("fresh buffer: len %d cap %d, want 0 and 100", len(b), cap(b))
	}
	// Only arrays within [min, size] are kept; a consumed head is fine.
	p.Put(make([]byte, 10, 59))
	p.Put(make([]byte, 10, 101))
	p.Put(b[30:50])
	for range 3 {
		if c := cap(p.Get()); c < p.Min() || c > 100 {
			t.Fatalf("Get returned capacity %d, want %d..100", c, p.Min())
		}
	}
}

func TestBufPoolRecycledOnlyGivesBack(t *testing.T) {
	p := NewBufPool(100, 60)
	if b := p.Recycled(); b != nil {
		t.Fatalf("empty pool: Recycled gave capacity %d, want nil", cap(b))
	}
	p.Put(make([]byte, 0, 80))
	// sync.Pool may drop what it holds at any time (a collection), so
	// only what it returns is checked.
	if b := p.Recycled(); b != nil && (len(b) != 0 || cap(b) != 80) {
		t.Fatalf("Recycled: len %d cap %d, want 0 and 80", len(b), cap(b))
	}
}
