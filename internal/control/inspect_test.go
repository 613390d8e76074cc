package control

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/namespace"
)

func TestInspectEndpoints(t *testing.T) {
	dir := t.TempDir()
	var asked []string
	stop, err := Serve(context.Background(), dir, Handlers{
		Usage: func(_ context.Context, path string) (namespace.Usage, error) {
			asked = append(asked, path)
			return namespace.Usage{Path: path, Files: 3}, nil
		},
		Stat: func(path string) (namespace.FileStat, error) {
			return namespace.FileStat{}, fmt.Errorf("%s: %w", path, syscall.ENOENT)
		},
	})
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
	u, err := c.Usage(odd)
	if err != nil || u.Path != odd || u.Files != 3 || len(asked) != 1 || asked[0] != odd {
		t.Fatalf("Usage(%q) = %+v, %v (handler asked %q)", odd, u, err, asked)
	}
	// The errno crosses the socket, so the CLI can tell what went wrong.
	if _, err := c.Stat("/missing"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("Stat of a missing file: %v, want ENOENT", err)
	}
	if _, err := c.Usage("relative"); err == nil {
		t.Fatal("a relative path was accepted")
	}
}
