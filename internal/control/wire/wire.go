package wire

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
)

// SocketName is the control socket's file name inside a volume directory.
const SocketName = "control.sock"

// ErrNoDaemon means no daemon answers on the volume's control socket.
var ErrNoDaemon = errors.New("no daemon serves this volume")

// CloneRequest asks the daemon for `doppel clone` or `doppel snapshot`;
// paths are "/"-rooted inside the volume.
type CloneRequest struct {
	Src      string   `json:"src"`
	Dst      string   `json:"dst"`
	Excludes []string `json:"excludes,omitempty"`
	ReadOnly bool     `json:"read_only,omitempty"`
	Lazy     bool     `json:"lazy,omitempty"`
}

// RemoteError is a failure the daemon reports; errors.Is sees its errno,
// so that ENOENT over the socket is ENOENT to the caller.
type RemoteError struct {
	Msg   string        `json:"error"`
	Errno syscall.Errno `json:"errno,omitempty"`
}

func (e RemoteError) Error() string { return "daemon: " + e.Msg }

func (e RemoteError) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}

// Client talks to one volume's daemon.
type Client struct{ http *http.Client }

// Dial returns a client of the daemon serving the volume in dir, with
// requests timing out after timeout; ErrNoDaemon if it has no socket.
func Dial(dir string, timeout time.Duration) (*Client, error) {
	path := filepath.Join(dir, SocketName)
	if _, err := os.Stat(path); err != nil {
		return nil, ErrNoDaemon
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	return &Client{http: &http.Client{Transport: tr, Timeout: timeout}}, nil
}

// Raw sends a request (in, if not nil, as its body) and returns the
// reply's body; a reply other than 200 OK becomes a RemoteError.
func (c *Client) Raw(method, path string, in []byte) ([]byte, error) {
	return c.RawContext(context.Background(), method, path, in)
}

// RawContext is Raw that gives up when ctx ends.
func (c *Client) RawContext(ctx context.Context, method, path string, in []byte) ([]byte, error) {
	var rd io.Reader
	if in != nil {
		rd = bytes.NewReader(in)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://doppel"+path, rd)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoDaemon, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("daemon reply: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e RemoteError
		if json.Unmarshal(body, &e) != nil || e.Msg == "" {
			e.Msg = fmt.Sprintf("%s %s: %s", method, path, resp.Status)
		}
		return nil, e
	}
	return body, nil
}

// PostJSON sends in as JSON and returns the reply's body.
func (c *Client) PostJSON(path string, in any) ([]byte, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	return c.Raw("POST", path, b)
}

// Transport is the client's connection to the socket, for requests that
// must not time out (streams).
func (c *Client) Transport() http.RoundTripper { return c.http.Transport }

// CloneResult is what a clone made.
type CloneResult struct {
	Src       string `json:"src"`
	Dst       string `json:"dst"`
	Ino       uint64 `json:"ino"`
	Pin       uint64 `json:"pin"`
	ReadOnly  bool   `json:"read_only"`
	Lazy      bool   `json:"lazy"`
	Parent    uint64 `json:"-"` // the new entry's directory, for the kernel's cache
	Name      string `json:"-"`
	ElapsedNs int64  `json:"elapsed_ns"`
}

// Summary is the line `doppel clone` and `doppel snapshot` print.
func (r CloneResult) Summary(src, dst string) string {
	kind := "clone"
	if r.ReadOnly {
		kind = "snapshot"
	}
	return fmt.Sprintf("%s %s -> %s (version %d, %s)", kind, src, dst, r.Pin, time.Duration(r.ElapsedNs).Round(time.Microsecond))
}
