package s3store

import (
	"context"
	"io"
	"net/http"
	"os"
	"syscall"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// sendfileClient is the SDK's HTTP client with one change: a request whose
// context names a file body (withFileBody) sends that file with sendfile.
//
// net/http sends a request body with sendfile when, under its own
// wrapping, the body is an io.Reader with a SyscallConn (an *os.File);
// the SDK wraps every body in a reader of its own, which hides the file.
// So the SDK gets a section reader of the file (to size, rewind and retry
// with) and this client swaps it for the file, positioned at its start,
// just before each attempt goes out. Over TLS, or where sendfile does not
// apply, net/http reads the file like any body.
type sendfileClient struct{ inner *awshttp.BuildableClient }

// newSendfileClient keeps up to idle connections to the server open
// between requests. The SDK's default, 10, is fewer than the store's
// uploads and prefetch GETs at once, so connections beyond it would be
// closed after each request and dialled again for the next.
func newSendfileClient(idle int) sendfileClient {
	return sendfileClient{awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConnsPerHost = max(t.MaxIdleConnsPerHost, idle)
		t.MaxIdleConns = max(t.MaxIdleConns, idle)
	})}
}

type fileBodyKey struct{}

// withFileBody returns ctx naming f as the body of the request made with
// it: its bytes from offset 0 to the request's Content-Length.
func withFileBody(ctx context.Context, f *os.File) context.Context {
	return context.WithValue(ctx, fileBodyKey{}, f)
}

func (c sendfileClient) Do(req *http.Request) (*http.Response, error) {
	if f, ok := req.Context().Value(fileBodyKey{}).(*os.File); ok && req.Body != nil && req.Body != http.NoBody {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		req.Body = fileBody{f, req.ContentLength}
	}
	return c.inner.Do(req)
}

// fileBody is f's bytes up to size as a request body that net/http can
// send with sendfile (it finds SyscallConn) and that leaves f open when
// the request ends. sendfile moves f's offset without Read knowing, so
// Read finds where the body ends from the offset: net/http reads a body
// to its end after sending Content-Length bytes, and fails the request if
// there is more.
type fileBody struct {
	f    *os.File
	size int64
}

func (b fileBody) Read(p []byte) (int, error) {
	off, err := b.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	if off >= b.size {
		return 0, io.EOF
	}
	return b.f.Read(p[:min(int64(len(p)), b.size-off)])
}

func (b fileBody) Close() error                          { return nil }
func (b fileBody) SyscallConn() (syscall.RawConn, error) { return b.f.SyscallConn() }
