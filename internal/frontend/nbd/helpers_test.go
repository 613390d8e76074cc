package nbd

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// testServer runs a Server for one test and stops it at cleanup, waiting
// for every connection it served.
type testServer struct {
	srv    *Server
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sock   string // set by listenUnix
	ctx    context.Context
	errs   chan error
}

func newTestServer(t testing.TB, exports ...Export) *testServer {
	t.Helper()
	ts := &testServer{srv: NewServer(), errs: make(chan error, 1024)}
	for _, e := range exports {
		if err := ts.srv.AddExport(e); err != nil {
			t.Fatal(err)
		}
	}
	ts.ctx, ts.cancel = context.WithCancel(context.Background())
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) stop() {
	ts.cancel()
	ts.wg.Wait()
}

// pipe serves one in-memory connection and returns the client end.
func (ts *testServer) pipe() net.Conn {
	client, server := net.Pipe()
	ts.wg.Add(1)
	go func() {
		defer ts.wg.Done()
		if err := ts.srv.ServeConn(ts.ctx, server); err != nil {
			select {
			case ts.errs <- err:
			default:
			}
		}
	}()
	return client
}

// socket serves one connection over a Unix socket pair and returns the
// client end: unlike a pipe, writes do not wait for the reader, as on a
// real connection (a TLS alert is sent while the peer is still writing).
func (ts *testServer) socket(t testing.TB) net.Conn {
	client, server := testutil.SocketPair(t)
	ts.wg.Add(1)
	go func() {
		defer ts.wg.Done()
		ts.srv.ServeConn(ts.ctx, server)
	}()
	return client
}

// listenUnix serves on a Unix socket in a temporary directory.
func (ts *testServer) listenUnix(t testing.TB) string {
	t.Helper()
	ts.sock = filepath.Join(t.TempDir(), "nbd.sock")
	ts.listen(t, "unix", ts.sock)
	return ts.sock
}

// listen serves on a new listener and returns its address.
func (ts *testServer) listen(t testing.TB, network, addr string) string {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	ts.wg.Add(1)
	go func() {
		defer ts.wg.Done()
		if err := ts.srv.Serve(ts.ctx, l); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	return l.Addr().String()
}

func (ts *testServer) dialUnix(t testing.TB) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", ts.sock)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// connect opens a pipe connection (a socket pair with cfg.socket) and
// negotiates.
func (ts *testServer) connect(t testing.TB, cfg clientConfig) *testClient {
	t.Helper()
	var conn net.Conn
	if cfg.socket {
		conn = ts.socket(t)
	} else {
		conn = ts.pipe()
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(requestTimeout)) // the negotiation's; do renews it
	c, err := newTestClient(conn, cfg)
	if err != nil {
		t.Fatalf("negotiate %+v: %v", cfg, err)
	}
	return c
}

// mustDo runs one request and fails the test on a protocol error.
func mustDo(t testing.TB, c *testClient, typ, flags uint16, off uint64, length uint32, payload []byte) *testReply {
	t.Helper()
	r, err := c.do(typ, flags, off, length, payload)
	if err != nil {
		t.Fatalf("cmd %d flags %#x [%d,+%d): %v", typ, flags, off, length, err)
	}
	return r
}

func wantErrno(t testing.TB, r *testReply, want Errno) {
	t.Helper()
	if r.errno != want {
		t.Fatalf("errno %d (%v), want %d (%v)", r.errno, r.errno, want, want)
	}
}
