package control

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/doppelfs/doppel/internal/ops"
)

// Inspection endpoints: "doppel df PATH" and "doppel stat FILE" on a
// mounted volume. The path is "/"-rooted inside the volume.
func serveInspect(mux *http.ServeMux, vol ops.API) {
	servePath(mux, "GET /v1/usage", vol.Usage)
	servePath(mux, "GET /v1/stat", vol.Stat)
}

// serveJSON answers pattern with fn, the request's body decoded as Req.
func serveJSON[Req, Res any](mux *http.ServeMux, pattern string, fn func(context.Context, Req) (Res, error)) {
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			reply(w, nil, err)
			return
		}
		res, err := fn(r.Context(), req)
		reply(w, res, err)
	})
}

// servePath answers pattern with fn of the request's path parameter.
func servePath[Res any](mux *http.ServeMux, pattern string, fn func(context.Context, string) (Res, error)) {
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		path, err := pathParam(r)
		if err != nil {
			reply(w, nil, err)
			return
		}
		res, err := fn(r.Context(), path)
		reply(w, res, err)
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
func (c *Client) Usage(ctx context.Context, path string) (ops.Usage, error) {
	var u ops.Usage
	return u, c.do(ctx, "GET", "/v1/usage?"+url.Values{"path": {path}}.Encode(), &u)
}

// Stat asks how the file at path is stored.
func (c *Client) Stat(ctx context.Context, path string) (ops.FileStat, error) {
	var st ops.FileStat
	return st, c.do(ctx, "GET", "/v1/stat?"+url.Values{"path": {path}}.Encode(), &st)
}
