package chunker

// fixed cuts at multiples of Size in file offsets, not in the data handed to
// Cut, so that a block rewritten in place (the common case for VM images and
// NBD exports) maps onto exactly the chunk it replaces, whatever the
// alignment of the write that carried it.
type fixed struct {
	pol  Policy
	size int64
}

func newFixed(p Policy) *fixed { return &fixed{pol: p, size: int64(p.Size)} }

func (f *fixed) MaxSize() int   { return int(f.size) }
func (f *fixed) Policy() Policy { return f.pol }

func (f *fixed) Cut(off int64, data []byte, final bool) int {
	// Size is a power of two, so the mask is the remainder modulo Size even
	// for negative offsets.
	first := f.size - off&(f.size-1)
	if int64(len(data)) >= first {
		return int(first)
	}
	if final {
		return len(data)
	}
	return 0
}
