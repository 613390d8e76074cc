package nbd

import (
	"net"
	"sync"
	"sync/atomic"
)

// replyWriter serialises replies from concurrent workers: each reply (all
// its pieces) goes out whole, under one lock, so chunks never interleave
// inside a message. Replies that queue up behind each other leave in one
// write: a sender flushes only when no other is waiting to send (one write
// system call per reply was a tenth of the CPU of small random reads at
// depth 16). A reply carrying a long piece (a large read's data) leaves at
// once, together with what is buffered, by one gathering write from the
// caller's memory: copying the data into the buffer first cost a copy of
// every byte read and a second system call per reply.
type replyWriter struct {
	mu      sync.Mutex
	conn    net.Conn
	buf     []byte      // replies waiting to leave together
	iov     net.Buffers // a gathering write's pieces, kept for reuse
	err     error
	waiting atomic.Int32 // senders that have not yet taken mu
}

const (
	// replyBufSize is how much the buffered replies may hold before they
	// leave even with another sender waiting.
	replyBufSize = 64 << 10
	// gatherPiece is the length from which a piece is written from the
	// caller's memory rather than copied into the buffer.
	gatherPiece = 16 << 10
)

func newReplyWriter(conn net.Conn) *replyWriter {
	return &replyWriter{conn: conn, buf: make([]byte, 0, replyBufSize)}
}

// send writes the pieces of one reply, and flushes unless another reply is
// waiting to follow it (that sender flushes both). When it returns, the
// pieces have been written or copied: the caller may reuse them. After the
// first failure it closes the connection, which also stops the request
// reader, and drops every later reply.
func (rw *replyWriter) send(pieces ...[]byte) error {
	rw.waiting.Add(1)
	rw.mu.Lock()
	defer rw.mu.Unlock()
	last := rw.waiting.Add(-1) == 0
	if rw.err != nil {
		return rw.err
	}
	if hasLongPiece(pieces) {
		return rw.writeGathered(pieces)
	}
	for _, p := range pieces {
		rw.buf = append(rw.buf, p...)
	}
	if !last && len(rw.buf) < replyBufSize {
		return nil
	}
	return rw.flush()
}

func hasLongPiece(pieces [][]byte) bool {
	for _, p := range pieces {
		if len(p) >= gatherPiece {
			return true
		}
	}
	return false
}

// writeGathered writes what is buffered and then pieces, with one writev
// where the connection supports it (TCP and Unix sockets do).
func (rw *replyWriter) writeGathered(pieces [][]byte) error {
	rw.iov = rw.iov[:0]
	if len(rw.buf) > 0 {
		rw.iov = append(rw.iov, rw.buf)
	}
	rw.iov = append(rw.iov, pieces...)
	iov := rw.iov // WriteTo consumes the slice it is given
	_, err := iov.WriteTo(rw.conn)
	clear(rw.iov[:cap(rw.iov)]) // after a failed write too: hold no caller's memory
	rw.buf = rw.buf[:0]
	if err != nil {
		rw.fail(err)
	}
	return err
}

func (rw *replyWriter) flush() error {
	if len(rw.buf) == 0 {
		return nil
	}
	_, err := rw.conn.Write(rw.buf)
	rw.buf = rw.buf[:0]
	if err != nil {
		rw.fail(err)
	}
	return err
}

func (rw *replyWriter) fail(err error) {
	rw.err = err
	rw.conn.Close()
}

func (rw *replyWriter) failed() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.err
}
