package namespace

import "sync"

// pinReads lets the releaser wait for reads through pins that began before
// a pin was let go. A pin is let go (unheld) only once no stub reads
// through it, so a read that loads its inode afterwards finds its own
// records; but a read that found a stub just before may still be reading
// the pin's retained versions. Like an RCU grace period, the releaser
// waits for the reads that had begun, never for later ones, so a steady
// stream of reads cannot starve it.
type pinReads struct {
	mu     sync.Mutex
	cond   sync.Cond
	gen    uint64
	active map[uint64]int // generation -> reads in flight
}

func newPinReads() *pinReads {
	p := &pinReads{active: map[uint64]int{}}
	p.cond.L = &p.mu
	return p
}

// begin marks a read through pins; the caller calls the returned end.
func (p *pinReads) begin() (end func()) {
	p.mu.Lock()
	g := p.gen
	p.active[g]++
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		if p.active[g]--; p.active[g] == 0 {
			delete(p.active, g)
			p.cond.Broadcast()
		}
		p.mu.Unlock()
	}
}

// wait returns once every read begun before it has ended.
func (p *pinReads) wait() {
	p.mu.Lock()
	defer p.mu.Unlock()
	last := p.gen
	p.gen++
	for p.busy(last) {
		p.cond.Wait()
	}
}

func (p *pinReads) busy(last uint64) bool {
	for g := range p.active {
		if g <= last {
			return true
		}
	}
	return false
}
