package nbd

import (
	"bufio"
	"bytes"
	"net"
	"sync"
	"testing"
)

// writeCounter is a connection that keeps what is written, and counts
// the writes.
type writeCounter struct {
	net.Conn
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (c *writeCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	return c.buf.Write(p)
}

func (c *writeCounter) Close() error { return nil }

func newCountedReplies() (*replyWriter, *writeCounter) {
	c := &writeCounter{}
	return &replyWriter{w: bufio.NewWriterSize(c, 64<<10), conn: c}, c
}

// TestRepliesQueuedBehindOneLeaveTogether: a reply with another waiting
// behind it stays buffered, and the last one flushes both in one write.
func TestRepliesQueuedBehindOneLeaveTogether(t *testing.T) {
	rw, c := newCountedReplies()
	rw.waiting.Add(1) // a sender about to take the lock
	if err := rw.send([]byte("first")); err != nil {
		t.Fatal(err)
	}
	if c.writes != 0 {
		t.Fatalf("a reply with another queued behind it was written out alone (%d writes)", c.writes)
	}
	rw.waiting.Add(-1) // that sender arrives
	if err := rw.send([]byte("second")); err != nil {
		t.Fatal(err)
	}
	if c.writes != 1 || c.buf.String() != "firstsecond" {
		t.Fatalf("%d writes of %q, want one of both replies", c.writes, c.buf.String())
	}
}

// TestConcurrentRepliesAllLeave: however senders interleave, every reply
// reaches the connection whole without anyone flushing afterwards.
func TestConcurrentRepliesAllLeave(t *testing.T) {
	rw, c := newCountedReplies()
	const senders, each = 8, 500
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for range each {
				if err := rw.send([]byte{byte('a' + s)}, []byte{byte('a' + s)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got := c.buf.Bytes()
	if len(got) != senders*each*2 {
		t.Fatalf("%d bytes reached the connection, want %d", len(got), senders*each*2)
	}
	for i := 0; i < len(got); i += 2 {
		if got[i] != got[i+1] {
			t.Fatalf("replies interleaved at byte %d", i)
		}
	}
	t.Logf("%d replies in %d writes", senders*each, c.writes)
}
