package control

import (
	"encoding/json"
	"net/http"

	"github.com/doppelfs/doppel/internal/control/wire"
	"github.com/doppelfs/doppel/internal/namespace"
)

// CloneRequest asks the daemon for `doppel clone` or `doppel snapshot`.
type CloneRequest = wire.CloneRequest

func serveClone(mux *http.ServeMux, clone func(CloneRequest) (namespace.CloneResult, error)) {
	mux.HandleFunc("POST /v1/clone", func(w http.ResponseWriter, r *http.Request) {
		var req CloneRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			reply(w, nil, err)
			return
		}
		res, err := clone(req)
		reply(w, res, err)
	})
}

// Clone asks the daemon to make a clone.
func (c *Client) Clone(req CloneRequest) (namespace.CloneResult, error) {
	var res namespace.CloneResult
	return res, c.doJSON("POST", "/v1/clone", req, &res)
}
