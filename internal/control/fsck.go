package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/doppelfs/doppel/internal/control/wire"
	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/ops"
)

// FsckRequest asks the daemon to check (and repair) its volume.
type FsckRequest = ops.FsckRequest

// FsckResult is the outcome: Report for a check, Repair for a repair.
type FsckResult = ops.FsckResult

// fsckLine is one line of the streamed reply: progress while the check
// runs, then the result or the error.
type fsckLine struct {
	Progress *fsck.Progress    `json:"progress,omitempty"`
	Result   *FsckResult       `json:"result,omitempty"`
	Error    *wire.RemoteError `json:"failure,omitempty"`
}

// progressEvery is how often the daemon streams progress (a variable for
// tests).
var progressEvery = 500 * time.Millisecond

// serveFsck answers POST /v1/fsck with newline-delimited JSON: progress
// lines while the check runs, then one line with the result or the
// error. The check stops if the client goes away.
func serveFsck(mux *http.ServeMux, vol ops.API) {
	mux.HandleFunc("POST /v1/fsck", func(w http.ResponseWriter, r *http.Request) {
		var req FsckRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			reply(w, nil, fmt.Errorf("bad fsck request: %w", err))
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		flusher, _ := w.(http.Flusher)
		var mu sync.Mutex // progress may come from the check's goroutines
		enc := json.NewEncoder(w)
		send := func(l fsckLine) {
			mu.Lock()
			defer mu.Unlock()
			enc.Encode(l)
			if flusher != nil {
				flusher.Flush()
			}
		}
		var last time.Time
		progress := func(p fsck.Progress) {
			if now := time.Now(); now.Sub(last) >= progressEvery {
				last = now
				send(fsckLine{Progress: &p})
			}
		}
		res, err := vol.Fsck(r.Context(), req, progress)
		if err != nil {
			var errno syscall.Errno
			errors.As(err, &errno)
			send(fsckLine{Error: &wire.RemoteError{Msg: err.Error(), Errno: errno}})
			return
		}
		send(fsckLine{Result: &res})
	})
}

// Fsck asks the daemon to check its volume, calling progress (if not nil)
// as the check goes. It waits as long as the check takes.
func (c *Client) Fsck(ctx context.Context, req FsckRequest, progress func(fsck.Progress)) (FsckResult, error) {
	body, _ := json.Marshal(req)
	resp, err := c.stream(ctx, "POST", "/v1/fsck", body) // a check reads the whole volume
	if err != nil {
		return FsckResult{}, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<30) // the result line holds every problem
	for sc.Scan() {
		var l fsckLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return FsckResult{}, fmt.Errorf("daemon reply: %w", err)
		}
		switch {
		case l.Error != nil:
			return FsckResult{}, *l.Error
		case l.Result != nil:
			return *l.Result, nil
		case l.Progress != nil && progress != nil:
			progress(*l.Progress)
		}
	}
	if err := sc.Err(); err != nil {
		return FsckResult{}, fmt.Errorf("daemon reply: %w", err)
	}
	return FsckResult{}, errors.New("daemon reply: the check ended without a result (did the daemon stop?)")
}
