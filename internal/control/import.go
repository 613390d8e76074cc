package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/doppelfs/doppel/internal/importer"
	"github.com/doppelfs/doppel/internal/ops"
)

// ImportRequest asks the daemon to import a host tree into its volume.
type ImportRequest = ops.ImportRequest

// ImportEvent is one line of the newline-delimited JSON stream that
// POST /v1/import answers with: progress lines while the import runs,
// then one line with the summary, and the error if it failed.
type ImportEvent struct {
	Progress *importer.Progress `json:"progress,omitempty"`
	Summary  *importer.Summary  `json:"summary,omitempty"`
	Error    string             `json:"error,omitempty"`
}

// serveImport streams an import's progress. Closing the connection
// interrupts the import.
func serveImport(vol ops.API) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req ImportRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"error": "bad import request: " + err.Error()})
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		flusher, _ := w.(http.Flusher)
		var mu sync.Mutex
		enc := json.NewEncoder(w)
		send := func(ev ImportEvent) {
			mu.Lock()
			defer mu.Unlock()
			enc.Encode(ev)
			if flusher != nil {
				flusher.Flush()
			}
		}
		w.WriteHeader(http.StatusOK) // the client knows the import started
		if flusher != nil {
			flusher.Flush()
		}
		sum, err := vol.Import(r.Context(), req, func(p importer.Progress) { send(ImportEvent{Progress: &p}) })
		last := ImportEvent{Summary: &sum}
		if err != nil {
			last.Error = err.Error()
		}
		send(last)
	}
}

// Import asks the daemon to import a host tree and follows its progress
// until it ends; cancelling ctx interrupts it.
func (c *Client) Import(ctx context.Context, req ImportRequest, progress func(importer.Progress)) (importer.Summary, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return importer.Summary{}, err
	}
	hr, err := http.NewRequestWithContext(ctx, "POST", "http://doppel/v1/import", bytes.NewReader(body))
	if err != nil {
		return importer.Summary{}, err
	}
	// No overall timeout: an import takes as long as the data needs.
	resp, err := (&http.Client{Transport: c.Transport()}).Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return importer.Summary{}, ctx.Err()
		}
		return importer.Summary{}, fmt.Errorf("the daemon did not take the import (unmounted meanwhile?): %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		b, _ := io.ReadAll(resp.Body)
		json.Unmarshal(b, &e)
		return importer.Summary{}, fmt.Errorf("daemon: %s", e.Error)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var ev ImportEvent
		if err := dec.Decode(&ev); err != nil {
			if ctx.Err() != nil {
				return importer.Summary{}, ctx.Err()
			}
			return importer.Summary{}, fmt.Errorf("the daemon's import stream broke off (see the daemon's log): %v", err)
		}
		switch {
		case ev.Summary != nil && ev.Error != "":
			return *ev.Summary, errors.New(ev.Error)
		case ev.Summary != nil:
			return *ev.Summary, nil
		case ev.Progress != nil && progress != nil:
			progress(*ev.Progress)
		}
	}
}
