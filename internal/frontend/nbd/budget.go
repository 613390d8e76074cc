package nbd

import "sync"

// byteBudget is a counting semaphore over bytes: the request reader takes
// room for a payload before allocating it and the worker returns it, so a
// connection never buffers more than the budget however fast a client
// sends.
type byteBudget struct {
	mu    sync.Mutex
	cond  sync.Cond
	limit int64
	used  int64
}

func newByteBudget(limit int64) *byteBudget {
	b := &byteBudget{limit: limit}
	b.cond.L = &b.mu
	return b
}

// acquire blocks until n bytes are free. n above the limit is clamped so
// that a single large request can still run, alone.
func (b *byteBudget) acquire(n int64) int64 {
	if n > b.limit {
		n = b.limit
	}
	b.mu.Lock()
	for b.used+n > b.limit {
		b.cond.Wait()
	}
	b.used += n
	b.mu.Unlock()
	return n
}

// release returns what acquire granted.
func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}
