package control

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/doppelfs/doppel/internal/namespace"
)

// Inspection endpoints: "doppel df PATH" and "doppel stat FILE" on a
// mounted volume. The path is "/"-rooted inside the volume.
func serveInspect(mux *http.ServeMux, h Handlers) {
	mux.HandleFunc("GET /v1/usage", func(w http.ResponseWriter, r *http.Request) {
		path, err := pathParam(r)
		if err != nil {
			reply(w, nil, err)
			return
		}
		u, err := h.Usage(r.Context(), path)
		reply(w, u, err)
	})
	mux.HandleFunc("GET /v1/stat", func(w http.ResponseWriter, r *http.Request) {
		path, err := pathParam(r)
		if err != nil {
			reply(w, nil, err)
			return
		}
		st, err := h.Stat(path)
		reply(w, st, err)
	})
}

func pathParam(r *http.Request) (string, error) {
	p := r.URL.Query().Get("path")
	if p == "" || p[0] != '/' {
		return "", errors.New(`want a "/"-rooted path parameter`)
	}
	return p, nil
}

func urlQuery(s string) string { return url.QueryEscape(s) }

// Usage asks for the space used by the subtree at path.
func (c *Client) Usage(path string) (namespace.Usage, error) {
	var u namespace.Usage
	return u, c.do("GET", "/v1/usage?"+url.Values{"path": {path}}.Encode(), &u)
}

// Stat asks how the file at path is stored.
func (c *Client) Stat(path string) (namespace.FileStat, error) {
	var st namespace.FileStat
	return st, c.do("GET", "/v1/stat?"+url.Values{"path": {path}}.Encode(), &st)
}
