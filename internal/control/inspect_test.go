package control

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/ops"
)

func TestInspectEndpoints(t *testing.T) {
	dir := t.TempDir()
	var asked []string
	stop, err := Serve(context.Background(), dir, fakeVolume{
		usage: func(_ context.Context, path string) (ops.Usage, error) {
			asked = append(asked, path)
			return ops.Usage{Path: path, Files: 3}, nil
		},
		stat: func(_ context.Context, path string) (ops.FileStat, error) {
			return ops.FileStat{}, fmt.Errorf("%s: %w", path, syscall.ENOENT)
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Names that need escaping in a query reach the handler unchanged.
	const odd = "/a b/&c=d?é"
	u, err := c.Usage(context.Background(), odd)
	if err != nil || u.Path != odd || u.Files != 3 || len(asked) != 1 || asked[0] != odd {
		t.Fatalf("Usage(%q) = %+v, %v (handler asked %q)", odd, u, err, asked)
	}
	// The errno crosses the socket, so the CLI can tell what went wrong.
	if _, err := c.Stat(context.Background(), "/missing"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("Stat of a missing file: %v, want ENOENT", err)
	}
	if _, err := c.Usage(context.Background(), "relative"); err == nil {
		t.Fatal("a relative path was accepted")
	}
}
