package control

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/doppelfs/doppel/internal/importer"
)

// TestImportStream runs an import through the socket: the client sees
// every progress report, then the summary, and the daemon's error.
func TestImportStream(t *testing.T) {
	dir, err := os.MkdirTemp("", "ctl") // a short path: socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var got ImportRequest
	stop, err := Serve(context.Background(), dir, fakeVolume{
		imports: func(ctx context.Context, req ImportRequest, progress func(importer.Progress)) (importer.Summary, error) {
			got = req
			for i := range 3 {
				progress(importer.Progress{Files: int64(i)})
			}
			s := importer.Summary{Target: req.Dst, Failures: []importer.Failure{{Path: "/x", Err: "denied"}}}
			if req.Dst == "/bad" {
				return s, errors.New("volume full")
			}
			return s, nil
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if fi, err := os.Stat(filepath.Join(dir, SocketName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v, %v; want mode 0600", fi, err)
	}
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	var seen []int64
	s, err := c.Import(context.Background(), ImportRequest{Src: "/src", Dst: "/dst", Jobs: 3},
		func(p importer.Progress) { seen = append(seen, p.Files) })
	if err != nil || got != (ImportRequest{Src: "/src", Dst: "/dst", Jobs: 3}) {
		t.Fatalf("import: %v; the daemon got %+v", err, got)
	}
	if len(seen) != 3 || seen[2] != 2 || s.Target != "/dst" || len(s.Failures) != 1 || s.Failures[0].Err != "denied" {
		t.Errorf("progress %v, summary %+v", seen, s)
	}
	s, err = c.Import(context.Background(), ImportRequest{Src: "/src", Dst: "/bad"}, nil)
	if err == nil || err.Error() != "volume full" || s.Target != "/bad" {
		t.Errorf("failed import: %v, summary %+v; want the daemon's error and its summary", err, s)
	}
}
