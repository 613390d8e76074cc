package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/doppelfs/doppel/internal/control/wire"
	"github.com/doppelfs/doppel/internal/ops"
)

// SocketName is the control socket's file name inside a volume directory.
const SocketName = wire.SocketName

// SpaceReport is what `doppel df` shows.
type SpaceReport = ops.SpaceReport

// Serve listens on the control socket in dir, answering with vol, until
// the returned stop is called, which waits (briefly) for the requests
// under way to end. metrics (if not nil) answers the Prometheus scrape.
func Serve(ctx context.Context, dir string, vol ops.API, metrics http.Handler) (func(), error) {
	path := filepath.Join(dir, SocketName)
	os.Remove(path) // stale from a killed daemon: we hold the volume lock
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/space", func(w http.ResponseWriter, r *http.Request) {
		rep, err := vol.Space(r.Context())
		reply(w, rep, err)
	})
	mux.HandleFunc("POST /v1/sync", func(w http.ResponseWriter, r *http.Request) {
		reply(w, struct{}{}, vol.Sync(r.Context()))
	})
	serveInspect(mux, vol)
	serveStatus(mux, vol)
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	serveFsck(mux, vol)
	mux.HandleFunc("POST /v1/import", serveImport(vol))
	serveClones(mux, vol)
	serveCopyFile(mux, vol)
	serveExport(mux, vol)
	// Requests run in base, so that stopping ends the long ones (an online
	// fsck, a subtree walk) before the volume under them closes.
	base, cancel := context.WithCancel(ctx)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	go srv.Serve(ln)
	return func() {
		cancel()
		wait, done := context.WithTimeout(context.Background(), stopWait)
		defer done()
		if srv.Shutdown(wait) != nil {
			srv.Close()
		}
		os.Remove(path)
	}, nil
}

// stopWait bounds how long stopping waits for requests to end.
const stopWait = 10 * time.Second

func reply(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		var errno syscall.Errno
		errors.As(err, &errno)
		w.WriteHeader(http.StatusInternalServerError)
		json.NewEncoder(w).Encode(wire.RemoteError{Msg: err.Error(), Errno: errno})
		return
	}
	json.NewEncoder(w).Encode(v)
}

// Client talks to a running daemon: it is the volume the daemon serves.
type Client struct {
	*wire.Client
}

var _ ops.API = (*Client)(nil)

// ErrNoDaemon means no daemon answers on the volume's socket.
var ErrNoDaemon = wire.ErrNoDaemon

// Dial returns a client for the daemon serving the volume in dir. Requests
// may take long (a sync of a large buffer), so they time out after minutes.
func Dial(dir string) (*Client, error) { return DialTimeout(dir, 5*time.Minute) }

// DialTimeout is Dial with requests timing out after timeout.
func DialTimeout(dir string, timeout time.Duration) (*Client, error) {
	c, err := wire.Dial(dir, timeout)
	if err != nil {
		return nil, err
	}
	return &Client{c}, nil
}

// do sends a request and decodes the JSON reply into out.
func (c *Client) do(ctx context.Context, method, path string, out any) error {
	body, err := c.RawContext(ctx, method, path, nil)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, out)
}

// doJSON sends in as the request's JSON body and decodes the reply.
func (c *Client) doJSON(ctx context.Context, method, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	body, err := c.RawContext(ctx, method, path, b)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, out)
}

// Space asks for the space report.
func (c *Client) Space(ctx context.Context) (ops.SpaceReport, error) {
	var r ops.SpaceReport
	return r, c.do(ctx, "GET", "/v1/space", &r)
}

// Sync asks the daemon to make everything durable.
func (c *Client) Sync(ctx context.Context) error {
	var r struct{}
	return c.do(ctx, "POST", "/v1/sync", &r)
}

// stream sends a request that takes as long as it needs (no timeout: a
// check, a file's copy) and returns the reply, whose body the caller
// reads and closes; a reply other than 200 OK becomes a RemoteError.
func (c *Client) stream(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://doppel"+path, rd)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: c.Transport()}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoDaemon, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var e wire.RemoteError
		if json.NewDecoder(resp.Body).Decode(&e) != nil || e.Msg == "" {
			e.Msg = method + " " + path + ": " + resp.Status
		}
		return nil, e
	}
	return resp, nil
}
