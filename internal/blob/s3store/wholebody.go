package s3store

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// wholeBodyClient is the SDK's HTTP client with one change: a request whose
// context carries its body's bytes (withWholeBody) sends them to the
// socket with one write, after the headers.
//
// net/http copies a body through a 32 KiB buffer, a read and a write(2)
// per 32 KiB; sendfile from a memfd (what packs used before) splices it
// page by page. One write copies it into the socket once, which on
// loopback costs the sender about half of what sendfile did
// (docs/SHARED.md, "Client library").
//
// net/http hands a body of known length to the connection's ReadFrom
// (through io.Copy) as an io.LimitedReader over the body it was given,
// once the headers are out; the SDK wraps every body in a reader of its
// own, which would hide the bytes. So the SDK gets a bytes.Reader (to
// size, rewind and retry with), this client swaps in a wholeBody just
// before each attempt goes out, and the connections it dials are
// wholeWriteConns, whose ReadFrom writes what is left of a wholeBody at
// once. Over TLS the body goes through the TLS connection as any other.
type wholeBodyClient struct{ inner *awshttp.BuildableClient }

// newWholeBodyClient keeps up to idle connections to the server open
// between requests. The SDK's default, 10, is fewer than the store's
// uploads and prefetch GETs at once, so connections beyond it would be
// closed after each request and dialled again for the next.
func newWholeBodyClient(idle int) wholeBodyClient {
	return wholeBodyClient{awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConnsPerHost = max(t.MaxIdleConnsPerHost, idle)
		t.MaxIdleConns = max(t.MaxIdleConns, idle)
		dial := t.DialContext
		if dial == nil {
			dial = (&net.Dialer{}).DialContext
		}
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return wholeWriteConn{c}, nil
		}
	})}
}

type wholeBodyKey struct{}

// withWholeBody returns ctx naming data as the body of the request made
// with it.
func withWholeBody(ctx context.Context, data []byte) context.Context {
	return context.WithValue(ctx, wholeBodyKey{}, data)
}

func (c wholeBodyClient) Do(req *http.Request) (*http.Response, error) {
	if data, ok := req.Context().Value(wholeBodyKey{}).([]byte); ok && req.Body != nil && req.Body != http.NoBody {
		req.Body = &wholeBody{data: data}
	}
	return c.inner.Do(req)
}

// wholeBody is a request body whose unread bytes a wholeWriteConn can
// take at once.
type wholeBody struct {
	data []byte
	off  int
}

func (b *wholeBody) Read(p []byte) (int, error) {
	if b.off >= len(b.data) {
		return 0, io.EOF
	}
	n := copy(p, b.data[b.off:])
	b.off += n
	return n, nil
}

func (b *wholeBody) Close() error { return nil }

// bodiesWrittenWhole counts the bodies a wholeWriteConn wrote with one
// write (tests check that uploads take that way).
var bodiesWrittenWhole atomic.Int64

// wholeWriteConn is a connection whose ReadFrom writes the rest of a
// wholeBody (up to the limit net/http put around it) with one Write.
type wholeWriteConn struct{ net.Conn }

func (c wholeWriteConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if b, ok := lr.R.(*wholeBody); ok {
			rest := b.data[b.off:]
			if int64(len(rest)) > lr.N {
				rest = rest[:lr.N]
			}
			n, err := c.Conn.Write(rest)
			b.off += n
			lr.N -= int64(n)
			bodiesWrittenWhole.Add(1)
			return int64(n), err
		}
	}
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}
