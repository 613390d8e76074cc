package control

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestCopyFile: a file's content crosses the socket with its mode; an
// error before the first byte keeps its errno.
func TestCopyFile(t *testing.T) {
	dir, err := os.MkdirTemp("", "ctl") // a short path: socket paths are limited
	testutil.Check(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	content := strings.Repeat("doppel ", 100000)
	stop, err := Serve(context.Background(), dir, fakeVolume{
		copyFile: func(_ context.Context, path string, w io.Writer) (uint32, error) {
			if path != "/f" {
				return 0, fmt.Errorf("%s: %w", path, syscall.ENOENT)
			}
			_, err := io.WriteString(w, content)
			return 0o100751, err
		},
	}, nil)
	testutil.Check(t, err)
	defer stop()
	c := testutil.Must(Dial(dir))
	var got bytes.Buffer
	mode, err := c.CopyFile(context.Background(), "/f", &got)
	if err != nil || mode != 0o100751 || got.String() != content {
		t.Fatalf("CopyFile = mode %o, %d bytes, %v", mode, got.Len(), err)
	}
	if _, err := c.CopyFile(context.Background(), "/missing", io.Discard); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("CopyFile of a missing file: %v, want ENOENT", err)
	}
}
