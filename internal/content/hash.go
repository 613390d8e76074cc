package content

import (
	"github.com/doppelfs/doppel/internal/blockhash"
	"github.com/doppelfs/doppel/internal/schema"
)

// hashSpans cuts group into the spans hashGroup's workers take one at a
// time, for blockhash to hash together: runs of up to blockhash.Lanes
// chunks of blockhash.Size bytes (the fixed 4 KiB policy and block
// exports write nothing else), and runs of other chunks up to
// longSpanBytes, whose 1 KiB pieces share the lanes.
func hashSpans(group []*Prepared) [][2]int {
	spans := make([][2]int, 0, len(group)/blockhash.Lanes+1)
	for lo := 0; lo < len(group); {
		hi := lo + 1
		if len(group[lo].data) == blockhash.Size {
			for hi < len(group) && hi-lo < blockhash.Lanes && len(group[hi].data) == blockhash.Size {
				hi++
			}
		} else {
			for n := len(group[lo].data); hi < len(group) && n < longSpanBytes && len(group[hi].data) != blockhash.Size; hi++ {
				n += len(group[hi].data)
			}
		}
		spans = append(spans, [2]int{lo, hi})
		lo = hi
	}
	return spans
}

// longSpanBytes is about what a span of other chunks holds: enough to
// fill the lanes many times over, few enough that a group (storeGroupBytes)
// still gives every core a span.
const longSpanBytes = 256 << 10

// hashSpan sets Zero, Hash and check of the chunks ps; a chunk to be
// named later gets its provisional name instead of its hash.
func hashSpan(ps []*Prepared) {
	// A span of blocks fits the arrays on the stack; a longer one grows them.
	var dataArr [blockhash.Lanes][]byte
	var hashedArr [blockhash.Lanes]*Prepared
	var sumsArr [blockhash.Lanes]schema.Hash
	data, hashed := dataArr[:0], hashedArr[:0]
	for _, p := range ps {
		switch p.Zero = isZero(p.data); {
		case p.Zero:
			p.provisional = false
		case p.provisional:
			p.nameProvisionally()
		default:
			data, hashed = append(data, p.data), append(hashed, p)
		}
	}
	sums := sumsArr[:0]
	if len(data) > len(sumsArr) {
		sums = make([]schema.Hash, len(data))
	}
	sums = sums[:len(data)]
	blockhash.Sum(data, sums)
	for k, p := range hashed {
		p.Hash = sums[k]
		p.check = schema.CheckSum(p.data) // cheap, and the bytes are in the cache now
	}
}
