package nbd

import (
	"sync/atomic"
	"testing"
)

// TestWorkerPoolReusesWorkers: every request runs, close waits for them,
// and no more workers start than requests can be in flight at once.
func TestWorkerPoolReusesWorkers(t *testing.T) {
	const inFlight, requests = 4, 2000
	slots := make(chan struct{}, inFlight)
	var ran, running, peak atomic.Int64
	pool := newWorkerPool(inFlight, func(req *request) {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		ran.Add(int64(req.Length))
		running.Add(-1)
		<-slots
	})
	for range requests {
		slots <- struct{}{}
		pool.dispatch(&request{requestHeader: requestHeader{Length: 1}})
	}
	pool.close()
	if got := ran.Load(); got != requests {
		t.Fatalf("%d of %d requests ran before close returned", got, requests)
	}
	if pool.started > inFlight || peak.Load() > inFlight {
		t.Fatalf("%d workers started, %d ran at once; at most %d requests were in flight", pool.started, peak.Load(), inFlight)
	}
	t.Logf("%d workers for %d requests", pool.started, requests)
}
