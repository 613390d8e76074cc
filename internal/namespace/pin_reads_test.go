package namespace

import (
	"testing"
	"time"
)

// wait must outlast the reads begun before it, and only those.
func TestPinReadsWait(t *testing.T) {
	p := newPinReads()
	endEarly := p.begin()
	waited := make(chan struct{})
	go func() {
		p.wait()
		close(waited)
	}()
	for started := false; !started; { // until wait has begun
		time.Sleep(time.Millisecond)
		p.mu.Lock()
		started = p.gen > 0
		p.mu.Unlock()
	}
	endLate := p.begin()
	defer endLate()
	select {
	case <-waited:
		t.Fatal("wait returned while a read begun before it was in flight")
	case <-time.After(20 * time.Millisecond):
	}
	endEarly()
	select {
	case <-waited:
	case <-time.After(time.Minute):
		t.Fatal("wait waits for a read begun after it")
	}
}
