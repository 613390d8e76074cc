package control

import (
	"context"
	"net/http"

	"github.com/doppelfs/doppel/internal/ops"
)

// CloneRequest asks the daemon for `doppel clone` or `doppel snapshot`.
type CloneRequest = ops.CloneRequest

// serveClones answers clone, clones, rmclone, diff and scan.
func serveClones(mux *http.ServeMux, vol ops.API) {
	serveJSON(mux, "POST /v1/clone", vol.Clone)
	mux.HandleFunc("GET /v1/clones", func(w http.ResponseWriter, r *http.Request) {
		res, err := vol.Clones(r.Context(), r.URL.Query().Get("space") == "1")
		reply(w, res, err)
	})
	servePath(mux, "POST /v1/rmclone", func(ctx context.Context, path string) (struct{}, error) {
		return struct{}{}, vol.RemoveClone(ctx, path)
	})
	serveJSON(mux, "POST /v1/diff", vol.Diff)
	serveJSON(mux, "POST /v1/scan", vol.Scan)
}

// Clone asks the daemon to make a clone.
func (c *Client) Clone(ctx context.Context, req ops.CloneRequest) (ops.CloneResult, error) {
	var res ops.CloneResult
	return res, c.doJSON(ctx, "POST", "/v1/clone", req, &res)
}

// Clones asks for the volume's clones and snapshots.
func (c *Client) Clones(ctx context.Context, withSpace bool) ([]ops.CloneInfo, error) {
	var res []ops.CloneInfo
	q := ""
	if withSpace {
		q = "?space=1"
	}
	return res, c.do(ctx, "GET", "/v1/clones"+q, &res)
}

// RemoveClone asks the daemon to remove a clone in the background.
func (c *Client) RemoveClone(ctx context.Context, path string) error {
	var res struct{}
	return c.do(ctx, "POST", "/v1/rmclone?path="+urlQuery(path), &res)
}

// Diff asks the daemon to compare two trees.
func (c *Client) Diff(ctx context.Context, req ops.DiffRequest) (ops.DiffResult, error) {
	var res ops.DiffResult
	return res, c.doJSON(ctx, "POST", "/v1/diff", req, &res)
}

// Scan asks for the distinct contents below paths.
func (c *Client) Scan(ctx context.Context, req ops.ScanRequest) ([]ops.ContentGroup, error) {
	var res []ops.ContentGroup
	return res, c.doJSON(ctx, "POST", "/v1/scan", req, &res)
}
