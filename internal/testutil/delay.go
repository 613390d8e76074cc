package testutil

import (
	"net"
	"sync"
	"testing"
	"time"
)

// DelayProxy is StartDelayProxy for a test: it fails the test if the
// proxy cannot listen, and stops the proxy when the test ends.
func DelayProxy(t testing.TB, target string, oneWay time.Duration) string {
	t.Helper()
	addr, stop, err := StartDelayProxy("127.0.0.1:0", target, oneWay)
	Check(t, err)
	t.Cleanup(stop)
	return addr
}

// StartDelayProxy listens on listen and forwards every connection to
// target, holding each piece of data oneWay before passing it on, in both
// directions: a round trip through it takes at least twice oneWay, as to
// a server elsewhere in a data centre, without limiting the bandwidth.
// Loopback benchmarks use it to show what round trips cost where they are
// not free. It returns the address it listens on and a function that
// closes it and its connections.
func StartDelayProxy(listen, target string, oneWay time.Duration) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return "", nil, err
	}
	p := &delayProxy{conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve(ln, target, oneWay)
	return ln.Addr().String(), func() { ln.Close(); p.close() }, nil
}

type delayProxy struct {
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

func (p *delayProxy) serve(ln net.Listener, target string, oneWay time.Duration) {
	defer p.wg.Done()
	for {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", target)
		if err != nil {
			in.Close()
			continue
		}
		if !p.track(in, out) {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			var pair sync.WaitGroup
			pair.Add(2)
			go func() { defer pair.Done(); delayCopy(out, in, oneWay) }()
			go func() { defer pair.Done(); delayCopy(in, out, oneWay) }()
			pair.Wait()
			p.untrack(in, out)
		}()
	}
}

// untrack closes and forgets a connection pair whose copies ended.
func (p *delayProxy) untrack(in, out net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	in.Close()
	out.Close()
	delete(p.conns, in)
	delete(p.conns, out)
}

// track records a connection pair, or closes it if the proxy is closed.
func (p *delayProxy) track(in, out net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		in.Close()
		out.Close()
		return false
	}
	p.conns[in], p.conns[out] = true, true
	return true
}

func (p *delayProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// delayCopy copies src to dst, each piece read written oneWay after it
// was read; at the end of src it closes dst's writing side.
func delayCopy(dst, src net.Conn, oneWay time.Duration) {
	type piece struct {
		b   []byte
		due time.Time
	}
	q := make(chan piece, 1024)
	go func() {
		defer close(q)
		for {
			b := make([]byte, 64<<10)
			n, err := src.Read(b)
			if n > 0 {
				q <- piece{b[:n], time.Now().Add(oneWay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for p := range q {
		time.Sleep(time.Until(p.due))
		if _, err := dst.Write(p.b); err != nil {
			src.Close()
			break
		}
	}
	for range q { // let the reader end
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	} else {
		dst.Close()
	}
}
