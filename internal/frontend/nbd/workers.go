package nbd

import "sync"

// workerPool runs a connection's requests on goroutines that outlive one
// request. A goroutine per request paid for growing its stack through the
// backend's deep call chains each time (runtime.copystack was about a tenth
// of the CPU of 4 KiB random reads); a worker grows it once.
//
// The caller bounds the requests in flight (the slots of transmit) by max:
// a request goes to an idle worker if one is waiting, else to a new one
// while there are fewer than max, else to the first worker that comes
// back (one must: fewer than max requests are running).
type workerPool struct {
	work    chan *request
	workers sync.WaitGroup
	run     func(*request) // executes one request and frees its slot
	max     int
	started int // workers started (only dispatch touches it)
}

func newWorkerPool(max int, run func(*request)) *workerPool {
	return &workerPool{work: make(chan *request), run: run, max: max}
}

// dispatch hands req to a worker. The caller holds one of max slots for
// it, which run frees.
func (p *workerPool) dispatch(req *request) {
	select {
	case p.work <- req:
		return
	default:
	}
	if p.started < p.max {
		p.started++
		p.workers.Add(1)
		go p.serve(req)
		return
	}
	p.work <- req
}

func (p *workerPool) serve(req *request) {
	defer p.workers.Done()
	for ok := true; ok; req, ok = <-p.work {
		p.run(req)
	}
}

// close waits for every request dispatched to finish; no dispatch may
// follow.
func (p *workerPool) close() {
	close(p.work)
	p.workers.Wait()
}
