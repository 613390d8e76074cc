package nbd

import (
	"bufio"
	"net"
	"sync"
)

// replyWriter serialises replies from concurrent workers: each reply (all
// its pieces) goes out whole, under one lock, so chunks never interleave
// inside a message.
type replyWriter struct {
	mu   sync.Mutex
	w    *bufio.Writer
	conn net.Conn
	err  error
}

// send writes the pieces of one reply and flushes. After the first failure
// it closes the connection, which also stops the request reader, and drops
// every later reply.
func (rw *replyWriter) send(pieces ...[]byte) error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.err != nil {
		return rw.err
	}
	for _, p := range pieces {
		if _, err := rw.w.Write(p); err != nil {
			rw.fail(err)
			return err
		}
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
