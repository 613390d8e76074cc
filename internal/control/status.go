package control

import (
	"context"
	"net/http"

	"github.com/doppelfs/doppel/internal/ops"
)

// Status is a mounted volume's daemon and its main counters.
type Status = ops.Status

func serveStatus(mux *http.ServeMux, vol ops.API) {
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		s, err := vol.Status(r.Context())
		reply(w, s, err)
	})
}

// Status asks the daemon for its status.
func (c *Client) Status(ctx context.Context) (ops.Status, error) {
	var s ops.Status
	return s, c.do(ctx, "GET", "/v1/status", &s)
}
