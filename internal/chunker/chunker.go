package chunker

import "fmt"

// Chunker decides chunk boundaries.
//
// Implementations are stateless and safe for concurrent use: a boundary
// depends only on the bytes (and, for fixed policies, the file offset) handed
// to Cut, so a write buffer can ask again after it has gathered more data.
type Chunker interface {
	// Cut returns the length of the first chunk of data, which starts at file
	// offset off. If final is false and no boundary can be decided yet (data is
	// shorter than the chunker needs to decide), it returns 0: the caller
	// must supply more data. If final is true it always returns a length in
	// 1..len(data) (for len(data)>0); it returns 0 only for empty data.
	//
	// A non-zero result with final false is always the same as the result
	// with final true for the same data, and stays the same when more data is
	// appended, so streaming and one-shot chunking agree.
	Cut(off int64, data []byte, final bool) int
	// MaxSize is the largest chunk this chunker ever returns.
	MaxSize() int
	// Policy returns the policy this chunker implements.
	Policy() Policy
}

// New returns a Chunker implementing p, or an error if p is not a policy
// ParsePolicy would accept.
func New(p Policy) (Chunker, error) {
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("chunker: policy %s: %w", p, err)
	}
	switch p.Kind {
	case kindCDC:
		return newCDC(p), nil
	default: // kindFixed; validate rejects anything else
		return newFixed(p), nil
	}
}
