package control

import (
	"encoding/json"
	"net/http"

	"github.com/doppelfs/doppel/internal/namespace"
)

// DiffRequest asks the daemon for `doppel diff`; paths are "/"-rooted
// inside the volume.
type DiffRequest struct {
	A     string `json:"a"`
	B     string `json:"b"`
	Patch bool   `json:"patch,omitempty"`
	Full  bool   `json:"full,omitempty"`
}

// ScanRequest asks which distinct contents the trees hold.
type ScanRequest struct {
	Paths []string `json:"paths"`
	Since string   `json:"since,omitempty"`
}

func serveClones(mux *http.ServeMux, h Handlers) {
	if h.Diff != nil {
		mux.HandleFunc("POST /v1/diff", func(w http.ResponseWriter, r *http.Request) {
			var req DiffRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				reply(w, nil, err)
				return
			}
			res, err := h.Diff(r, req)
			reply(w, res, err)
		})
	}
	if h.Clones != nil {
		mux.HandleFunc("GET /v1/clones", func(w http.ResponseWriter, r *http.Request) {
			res, err := h.Clones(r.Context(), r.URL.Query().Get("space") == "1")
			reply(w, res, err)
		})
	}
	if h.RemoveClone != nil {
		mux.HandleFunc("POST /v1/rmclone", func(w http.ResponseWriter, r *http.Request) {
			path, err := pathParam(r)
			if err != nil {
				reply(w, nil, err)
				return
			}
			reply(w, struct{}{}, h.RemoveClone(path))
		})
	}
	if h.Scan != nil {
		mux.HandleFunc("POST /v1/scan", func(w http.ResponseWriter, r *http.Request) {
			var req ScanRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				reply(w, nil, err)
				return
			}
			res, err := h.Scan(r.Context(), req)
			reply(w, res, err)
		})
	}
}

// Diff asks the daemon to compare two trees.
func (c *Client) Diff(req DiffRequest) (namespace.DiffResult, error) {
	var res namespace.DiffResult
	return res, c.doJSON("POST", "/v1/diff", req, &res)
}

// Clones asks for the volume's clones and snapshots.
func (c *Client) Clones(withSpace bool) ([]namespace.CloneInfo, error) {
	var res []namespace.CloneInfo
	q := ""
	if withSpace {
		q = "?space=1"
	}
	return res, c.do("GET", "/v1/clones"+q, &res)
}

// RemoveClone asks the daemon to remove a clone in the background.
func (c *Client) RemoveClone(path string) error {
	var res struct{}
	return c.do("POST", "/v1/rmclone?path="+urlQuery(path), &res)
}

// Scan asks for the distinct contents below paths.
func (c *Client) Scan(req ScanRequest) ([]namespace.ContentGroup, error) {
	var res []namespace.ContentGroup
	return res, c.doJSON("POST", "/v1/scan", req, &res)
}
