package nbd

import (
	"bytes"
	"io"
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
	return newReplyWriter(c), c
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

// loopbackPair is a TCP connection on loopback: the server's end, whose
// writes a reader on the client's end collects into got (complete once
// the server's end is closed).
func loopbackPair(t *testing.T) (server net.Conn, got func() []byte) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(client)
		done <- b
	}()
	return server, func() []byte { server.Close(); return <-done }
}

// TestLongReplyLeavesAtOnceAfterBufferedOnes: a reply with a long piece
// goes out before send returns, after the replies buffered before it, and
// the caller's memory can be reused at once (a read's buffer goes back
// to the pool when send returns).
func TestLongReplyLeavesAtOnceAfterBufferedOnes(t *testing.T) {
	conn, got := loopbackPair(t)
	rw := newReplyWriter(conn)
	rw.waiting.Add(1) // a sender about to take the lock keeps "small" buffered
	if err := rw.send([]byte("small")); err != nil {
		t.Fatal(err)
	}
	if len(rw.buf) == 0 {
		t.Fatal("a reply with another queued behind it was not buffered")
	}
	rw.waiting.Add(-1)
	data := bytes.Repeat([]byte("d"), 3*gatherPiece)
	if err := rw.send([]byte("header"), data); err != nil {
		t.Fatal(err)
	}
	if len(rw.buf) != 0 {
		t.Fatalf("%d bytes still buffered after a long reply", len(rw.buf))
	}
	want := append([]byte("smallheader"), data...)
	clear(data) // the caller reuses its buffer
	if err := rw.send([]byte("tail")); err != nil {
		t.Fatal(err)
	}
	want = append(want, "tail"...)
	if b := got(); !bytes.Equal(b, want) {
		t.Fatalf("the client got %d bytes, want %d in order", len(b), len(want))
	}
}

// TestLongRepliesFromManySenders: long and short replies from concurrent
// senders each arrive whole.
func TestLongRepliesFromManySenders(t *testing.T) {
	conn, got := loopbackPair(t)
	rw := newReplyWriter(conn)
	const senders, each = 4, 50
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				n := 1 + i%3*gatherPiece // short and long replies mixed
				body := bytes.Repeat([]byte{byte('a' + s)}, n)
				head := []byte{byte('A' + s), byte(n >> 16), byte(n >> 8), byte(n)}
				if err := rw.send(head, body); err != nil {
					t.Error(err)
					return
				}
				clear(body)
			}
		})
	}
	wg.Wait()
	b := got()
	replies := 0
	for len(b) > 0 {
		if len(b) < 4 {
			t.Fatalf("%d stray bytes at the end", len(b))
		}
		s := b[0] - 'A'
		n := int(b[1])<<16 | int(b[2])<<8 | int(b[3])
		if s >= senders || len(b) < 4+n || !bytes.Equal(b[4:4+n], bytes.Repeat([]byte{'a' + s}, n)) {
			t.Fatalf("reply %d arrived torn or interleaved", replies)
		}
		b = b[4+n:]
		replies++
	}
	if replies != senders*each {
		t.Fatalf("%d replies arrived, want %d", replies, senders*each)
	}
}
