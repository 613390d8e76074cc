package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/doppelfs/doppel/internal/control/wire"
	"github.com/doppelfs/doppel/internal/ops"
)

// ExportEvent is one line of the newline-delimited JSON stream that
// POST /v1/nbd answers with: Started once the server listens, then, when
// it has stopped and flushed its files, Done with the error if any.
type ExportEvent struct {
	Started *ops.ExportStatus `json:"started,omitempty"`
	Done    bool              `json:"done,omitempty"`
	Error   string            `json:"error,omitempty"`
}

// serveExport answers POST /v1/nbd, whose body is the request followed by
// nothing until the client wants the export stopped: the export lives as
// long as the request's body stays open. The client ends it by closing
// the body (then it is told how the flush went) or by going away (its
// connection closes: a killed `doppel nbd` stops its export too).
func serveExport(mux *http.ServeMux, vol ops.API) {
	mux.HandleFunc("POST /v1/nbd", func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		rc.EnableFullDuplex()
		dec := json.NewDecoder(r.Body)
		var req ops.ExportRequest
		if err := dec.Decode(&req); err != nil {
			reply(w, nil, fmt.Errorf("bad export request: %w", err))
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		bodyDone := make(chan struct{})
		go func() {
			defer close(bodyDone)
			io.Copy(io.Discard, io.MultiReader(dec.Buffered(), r.Body))
			cancel()
		}()
		w.Header().Set("Content-Type", "application/x-ndjson")
		var mu sync.Mutex
		enc := json.NewEncoder(w)
		send := func(ev ExportEvent) {
			mu.Lock()
			defer mu.Unlock()
			enc.Encode(ev)
			rc.Flush()
		}
		err := vol.Export(ctx, req, func(st ops.ExportStatus) { send(ExportEvent{Started: &st}) })
		last := ExportEvent{Done: true}
		if err != nil {
			last.Error = err.Error()
		}
		send(last)
		// The body is not read after the handler returns.
		rc.SetReadDeadline(time.Now())
		<-bodyDone
	})
}

// Export asks the daemon to serve files over NBD, calls started once it
// listens, and keeps the export running until ctx is done; then it asks
// the daemon to stop it and returns how the stop and the flush went. If
// this process dies, the daemon stops the export when the connection
// closes.
func (c *Client) Export(ctx context.Context, req ops.ExportRequest, started func(ops.ExportStatus)) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() {
		if _, err := pw.Write(b); err != nil {
			return
		}
		<-ctx.Done()
		pw.Close()
	}()
	defer pw.Close()
	hr, err := http.NewRequest("POST", "http://doppel/v1/nbd", pr)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: c.Transport()}).Do(hr)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoDaemon, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e wire.RemoteError
		if json.NewDecoder(resp.Body).Decode(&e) != nil || e.Msg == "" {
			e.Msg = "POST /v1/nbd: " + resp.Status
		}
		return e
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var ev ExportEvent
		if err := dec.Decode(&ev); err != nil {
			return fmt.Errorf("the daemon's export stream broke off (unmounted? see its log): %v", err)
		}
		switch {
		case ev.Done && ev.Error != "":
			return errors.New(ev.Error)
		case ev.Done && ctx.Err() == nil:
			return errors.New("the process serving the volume stopped the export (the volume was unmounted, or the doppel nbd that opened it exited)")
		case ev.Done:
			return nil
		case ev.Started != nil && started != nil:
			started(*ev.Started)
		}
	}
}
