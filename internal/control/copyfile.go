package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/doppelfs/doppel/internal/ops"
)

// modeHeader carries the file's mode, sent before its content.
const modeHeader = "Doppel-Mode"

// serveCopyFile answers GET /v1/file?path= with the file's content and,
// in a trailer, its mode (known once the copy is done). A failure before
// the first byte is an ordinary error reply; one during the copy leaves
// the trailer out, which the client reports.
func serveCopyFile(mux *http.ServeMux, vol ops.API) {
	mux.HandleFunc("GET /v1/file", func(w http.ResponseWriter, r *http.Request) {
		path, err := pathParam(r)
		if err != nil {
			reply(w, nil, err)
			return
		}
		sw := &startWriter{w: w}
		mode, err := vol.CopyFile(r.Context(), path, sw)
		if err != nil {
			if !sw.started {
				reply(w, nil, err)
			}
			return
		}
		sw.start()
		w.Header().Set(modeHeader, strconv.FormatUint(uint64(mode), 8))
	})
}

// startWriter sends the reply's header, announcing the trailer, before
// the first byte.
type startWriter struct {
	w       http.ResponseWriter
	started bool
}

func (s *startWriter) start() {
	if s.started {
		return
	}
	s.started = true
	s.w.Header().Set("Trailer", modeHeader)
	s.w.Header().Set("Content-Type", "application/octet-stream")
	s.w.WriteHeader(http.StatusOK)
}

func (s *startWriter) Write(p []byte) (int, error) {
	s.start()
	return s.w.Write(p)
}

// CopyFile asks the daemon for the content of the file at path and
// writes it to w.
func (c *Client) CopyFile(ctx context.Context, path string, w io.Writer) (uint32, error) {
	resp, err := c.stream(ctx, "GET", "/v1/file?"+url.Values{"path": {path}}.Encode(), nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return 0, fmt.Errorf("copy of %s from the daemon: %w", path, err)
	}
	mode, err := strconv.ParseUint(resp.Trailer.Get(modeHeader), 8, 32)
	if err != nil {
		return 0, errors.New("copy of " + path + " from the daemon broke off (see the daemon's log)")
	}
	return uint32(mode), nil
}
