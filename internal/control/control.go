package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// SocketName is the control socket's file name inside a volume directory.
const SocketName = "control.sock"

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
	Space  func() (SpaceReport, error)
	Sync   func() error
	Import ImportHandler
}

// Serve listens on the control socket in dir until ctx ends.
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
	mux.HandleFunc("POST /v1/import", serveImport(h.Import))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return func() {
		// Requests in flight (an import the daemon interrupted) get to
		// send their last answer.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		os.Remove(path)
	}, nil
}

func reply(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	json.NewEncoder(w).Encode(v)
}

// Client talks to a running daemon.
type Client struct {
	http *http.Client
}

// ErrNoDaemon means no daemon answers on the volume's socket.
var ErrNoDaemon = errors.New("no daemon serves this volume")

// Dial returns a client for the daemon serving the volume in dir.
func Dial(dir string) (*Client, error) {
	path := filepath.Join(dir, SocketName)
	if _, err := os.Stat(path); err != nil {
		return nil, ErrNoDaemon
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	return &Client{http: &http.Client{Transport: tr, Timeout: 5 * time.Minute}}, nil
}

func (c *Client) do(method, path string, out any) error {
	req, _ := http.NewRequest(method, "http://doppel"+path, nil)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoDaemon, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		json.Unmarshal(body, &e)
		return fmt.Errorf("daemon: %s", e.Error)
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
