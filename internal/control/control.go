package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/doppelfs/doppel/internal/control/wire"
	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/namespace"
)

// SocketName is the control socket's file name inside a volume directory.
const SocketName = wire.SocketName

// SpaceReport is what `doppel df` shows.
type SpaceReport struct {
	Store          string  `json:"store"`
	LogicalBytes   int64   `json:"logical_bytes"`
	RawBytes       int64   `json:"raw_bytes"`
	PhysicalBytes  int64   `json:"physical_bytes"`
	MetaBytes      int64   `json:"meta_bytes"`
	AllocatedBytes int64   `json:"allocated_bytes"`
	Segments       int     `json:"segments"`
	Chunks         int64   `json:"chunks"`
	Inodes         int64   `json:"inodes"`
	DedupRatio     float64 `json:"dedup_ratio"`
	CompressRatio  float64 `json:"compression_ratio"`
	ReclaimedBytes int64   `json:"reclaimed_bytes"`
}

// Handlers are the daemon's answers.
type Handlers struct {
	Space   func() (SpaceReport, error)
	Sync    func() error
	Usage   func(ctx context.Context, path string) (namespace.Usage, error)
	Stat    func(path string) (namespace.FileStat, error)
	Status  func() (Status, error)
	Metrics http.Handler // the Prometheus scrape
	// Fsck checks (or repairs) the volume in use, reporting progress.
	Fsck   func(ctx context.Context, req FsckRequest, progress func(fsck.Progress)) (FsckResult, error)
	Import ImportHandler
	Clone  func(CloneRequest) (namespace.CloneResult, error)
	Diff   func(r *http.Request, req DiffRequest) (namespace.DiffResult, error)
	Clones func(ctx context.Context, withSpace bool) ([]namespace.CloneInfo, error)
	// RemoveClone detaches a clone and frees it in the background.
	RemoveClone func(path string) error
	Scan        func(ctx context.Context, req ScanRequest) ([]namespace.ContentGroup, error)
}

// Serve listens on the control socket in dir until the returned stop is
// called, which waits (briefly) for the requests under way to end.
func Serve(ctx context.Context, dir string, h Handlers) (func(), error) {
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
		rep, err := h.Space()
		reply(w, rep, err)
	})
	mux.HandleFunc("POST /v1/sync", func(w http.ResponseWriter, r *http.Request) {
		reply(w, struct{}{}, h.Sync())
	})
	serveInspect(mux, h)
	if h.Status != nil {
		serveStatus(mux, h.Status)
	}
	if h.Metrics != nil {
		mux.Handle("GET /metrics", h.Metrics)
	}
	if h.Fsck != nil {
		serveFsck(mux, h.Fsck)
	}
	if h.Import != nil {
		mux.HandleFunc("POST /v1/import", serveImport(h.Import))
	}
	if h.Clone != nil {
		serveClone(mux, h.Clone)
	}
	serveClones(mux, h)
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

// Client talks to a running daemon.
type Client struct {
	*wire.Client
}

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
func (c *Client) do(method, path string, out any) error {
	body, err := c.Raw(method, path, nil)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, out)
}

// doJSON sends in as the request's JSON body and decodes the reply.
func (c *Client) doJSON(method, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	body, err := c.Raw(method, path, b)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, out)
}

// Space asks for the space report.
func (c *Client) Space() (SpaceReport, error) {
	var r SpaceReport
	return r, c.do("GET", "/v1/space", &r)
}

// Sync asks the daemon to make everything durable.
func (c *Client) Sync() error {
	var r struct{}
	return c.do("POST", "/v1/sync", &r)
}
