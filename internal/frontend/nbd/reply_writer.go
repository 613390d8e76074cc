package nbd

import (
	"bufio"
	"net"
	"sync"
	"sync/atomic"
)

// replyWriter serialises replies from concurrent workers: each reply (all
// its pieces) goes out whole, under one lock, so chunks never interleave
// inside a message. Replies that queue up behind each other leave in one
// write: a sender flushes only when no other is waiting to send (one write
// system call per reply was a tenth of the CPU of small random reads at
// depth 16).
type replyWriter struct {
	mu      sync.Mutex
	w       *bufio.Writer
	conn    net.Conn
	err     error
	waiting atomic.Int32 // senders that have not yet taken mu
}

// send writes the pieces of one reply, and flushes unless another reply is
// waiting to follow it (that sender flushes both). After the first failure
// it closes the connection, which also stops the request reader, and drops
// every later reply.
func (rw *replyWriter) send(pieces ...[]byte) error {
	rw.waiting.Add(1)
	rw.mu.Lock()
	defer rw.mu.Unlock()
	last := rw.waiting.Add(-1) == 0
	if rw.err != nil {
		return rw.err
	}
	for _, p := range pieces {
		if _, err := rw.w.Write(p); err != nil {
			rw.fail(err)
			return err
		}
	}
	if !last {
		return nil
	}
	if err := rw.w.Flush(); err != nil {
		rw.fail(err)
		return err
	}
	return nil
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
