package metrics

import (
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestObservePlacesLatenciesInBuckets(t *testing.T) {
	var o Ops
	o.Observe(OpWrite, 0, 0)
	o.Observe(OpWrite, LatencyBounds[0], 0)   // a bound belongs to its bucket (le)
	o.Observe(OpWrite, LatencyBounds[0]+1, 0) // just above: the next one
	o.Observe(OpWrite, time.Hour, syscall.EIO)
	o.Observe(OpLookup, 3*time.Millisecond, syscall.ENOENT)

	w := o.Read(OpWrite)
	if w.Count != 4 || w.Errors != 1 || w.EIO != 1 {
		t.Errorf("write: count %d errors %d eio %d; want 4, 1, 1", w.Count, w.Errors, w.EIO)
	}
	if w.Buckets[0] != 2 || w.Buckets[1] != 1 || w.Buckets[len(LatencyBounds)] != 1 {
		t.Errorf("write buckets %v: want 2 in the first, 1 in the second, 1 above every bound", w.Buckets)
	}
	if want := 2*LatencyBounds[0] + 1 + time.Hour; w.Sum != want {
		t.Errorf("write sum %v, want %v", w.Sum, want)
	}
	l := o.Read(OpLookup)
	if l.Count != 1 || l.Errors != 1 || l.EIO != 0 {
		t.Errorf("lookup: count %d errors %d eio %d; want 1, 1, 0", l.Count, l.Errors, l.EIO)
	}
	if i := boundIndex(t, 5*time.Millisecond); l.Buckets[i] != 1 { // 3 ms: above 2.5 ms, at most 5 ms
		t.Errorf("lookup of 3 ms in buckets %v, want it in bucket %d (le 5 ms)", l.Buckets, i)
	}
	if tot := o.Totals(); tot.Count != 5 || tot.Errors != 2 || tot.EIO != 1 {
		t.Errorf("totals %+v: want 5 requests, 2 errors, 1 EIO", tot)
	}
	if o.Read(OpRead).Count != 0 {
		t.Errorf("read counted without being observed")
	}
}

func boundIndex(t *testing.T, d time.Duration) int {
	for i, b := range LatencyBounds {
		if b == d {
			return i
		}
	}
	t.Fatalf("no bucket bound of %v", d)
	return -1
}

func TestLatencyBoundsIncrease(t *testing.T) {
	for i := 1; i < len(LatencyBounds); i++ {
		if LatencyBounds[i] <= LatencyBounds[i-1] {
			t.Fatalf("bound %d (%v) is not above bound %d (%v)", i, LatencyBounds[i], i-1, LatencyBounds[i-1])
		}
	}
}

func TestOpNames(t *testing.T) {
	seen := map[string]bool{}
	for op := range numOps {
		name := op.String()
		if name == "" || seen[name] {
			t.Errorf("op %d has an empty or repeated name %q", op, name)
		}
		seen[name] = true
	}
	if OpCopyFileRange.String() != "copy_file_range" || OpReleasedir.String() != "releasedir" {
		t.Errorf("op names out of step with the constants: %q, %q", OpCopyFileRange, OpReleasedir)
	}
}

// Requests observed while scrapes run are all counted (run with -race).
func TestObserveDuringScrapes(t *testing.T) {
	var o Ops
	reg := NewRegistry(&o, func() (Figures, error) { return Figures{}, nil })
	const workers, each = 4, 5000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				o.Observe(OpRead, time.Duration(i*w)*time.Microsecond, 0)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for scraping := true; scraping; {
		select {
		case <-done:
			scraping = false
		default:
		}
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	if got := o.Read(OpRead).Count; got != workers*each {
		t.Errorf("count %d after %d observations", got, workers*each)
	}
}
