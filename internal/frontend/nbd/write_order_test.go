package nbd

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// orderBackend records the offsets of the writes it is given, in the
// order the calls begin, and how many ran at once. Each write dawdles a
// random while, so that workers racing each other would overtake.
type orderBackend struct {
	*memBackend
	mu      sync.Mutex
	offsets []int64
	running int
	overlap int // most plain writes inside WriteAt at once
	hold    chan struct{}
}

func (b *orderBackend) WriteAt(p []byte, off int64, fua bool) error {
	b.mu.Lock()
	b.offsets = append(b.offsets, off)
	b.running++
	b.overlap = max(b.overlap, b.running)
	hold := b.hold
	b.mu.Unlock()
	if hold != nil && off == 0 {
		<-hold
	}
	time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
	err := b.memBackend.WriteAt(p, off, fua)
	b.mu.Lock()
	b.running--
	b.mu.Unlock()
	return err
}

// streamWrites sends n writes of size bytes each, back to back from
// offset 0, the i-th filled with byte i+1, without waiting for replies,
// and then reads their replies; it returns the image they make.
func streamWrites(t *testing.T, c *testClient, n, size int) []byte {
	t.Helper()
	want := make([]byte, n*size)
	sent := make(chan error, 1)
	go func() { // the pipe is synchronous: replies are read meanwhile
		for i := range n {
			p := bytes.Repeat([]byte{byte(i + 1)}, size)
			copy(want[i*size:], p)
			if _, err := c.send(cmdWrite, 0, uint64(i*size), uint32(size), p); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	for range n {
		if r, err := c.readReply(); err != nil || r.errno != 0 {
			t.Fatalf("write reply: %v, errno %v", err, r.errno)
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	return want
}

// TestWritesOfAConnectionApplyInOrder: a client streams writes without
// waiting for replies; the backend gets them one at a time, in the order
// sent, though up to MaxInFlight workers run the connection's requests.
// Small writes are left unordered.
func TestWritesOfAConnectionApplyInOrder(t *testing.T) {
	const n, block = 200, orderedWriteMin
	be := &orderBackend{memBackend: newMemBackend(n * block)}
	ts := newTestServer(t, Export{Name: "disk", Backend: be})
	c := ts.connect(t, clientConfig{export: "disk"})
	want := streamWrites(t, c, n, block)
	for i, off := range be.offsets {
		if off != int64(i*block) {
			t.Fatalf("write %d reached the backend as the write at %d", i, off/block)
		}
	}
	if be.overlap != 1 {
		t.Errorf("%d writes ran in the backend at once", be.overlap)
	}
	if data, _ := be.snapshot(); !bytes.Equal(data, want) {
		t.Error("the image differs from the writes")
	}

	// Small writes run side by side, as before there were turns.
	be.mu.Lock()
	be.offsets, be.overlap = nil, 0
	be.mu.Unlock()
	streamWrites(t, c, n, 4096)
	if be.overlap < 2 {
		t.Errorf("small writes ran one at a time (%d at once)", be.overlap)
	}
}

// TestOrderedWritesHoldNoRead: a read sent after a write that is stuck in
// the backend is answered meanwhile; only the write after it waits.
func TestOrderedWritesHoldNoRead(t *testing.T) {
	const block = orderedWriteMin
	be := &orderBackend{memBackend: newMemBackend(4 * block), hold: make(chan struct{})}
	ts := newTestServer(t, Export{Name: "disk", Backend: be})
	c := ts.connect(t, clientConfig{export: "disk"})
	began := func() int {
		be.mu.Lock()
		defer be.mu.Unlock()
		return len(be.offsets)
	}
	first, _ := c.send(cmdWrite, 0, 0, block, bytes.Repeat([]byte{1}, block))
	for began() == 0 {
		time.Sleep(time.Millisecond)
	}
	second, _ := c.send(cmdWrite, 0, block, block, bytes.Repeat([]byte{2}, block))
	read, _ := c.send(cmdRead, 0, 2*block, block, nil)
	r, err := c.readReply()
	if err != nil || r.cookie != read {
		t.Fatalf("first reply: cookie %#x (%v), want the read's %#x", r.cookie, err, read)
	}
	time.Sleep(20 * time.Millisecond) // room for the second write to begin, were it not held
	be.mu.Lock()
	n := len(be.offsets)
	be.mu.Unlock()
	if n != 1 {
		t.Errorf("%d writes began while the first was held, want 1", n)
	}
	close(be.hold)
	for _, want := range []uint64{first, second} {
		if r, err := c.readReply(); err != nil || r.cookie != want || r.errno != 0 {
			t.Fatalf("reply %#x (%v, errno %v), want %#x", r.cookie, err, r.errno, want)
		}
	}
}
