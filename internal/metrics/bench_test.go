package metrics

import (
	"testing"
	"time"
)

// What the FUSE adapter adds to every request, besides two clock reads.
func BenchmarkObserve(b *testing.B) {
	var o Ops
	for i := range b.N {
		o.Observe(OpWrite, time.Duration(i&1023)*time.Microsecond, 0)
	}
}

// Two cores answering requests of one kind at once share its counters.
func BenchmarkObserveParallel(b *testing.B) {
	var o Ops
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			o.Observe(OpGetattr, 20*time.Microsecond, 0)
		}
	})
}

// A full observation as the adapter makes it: the clock reads included.
func BenchmarkObserveWithClock(b *testing.B) {
	var o Ops
	for range b.N {
		start := time.Now()
		o.Observe(OpLookup, time.Since(start), 0)
	}
}
