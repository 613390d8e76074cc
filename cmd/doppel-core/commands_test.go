package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/doppelfs/doppel/internal/ops"
)

// fakeVolume answers the operations a test gives it; the others fail.
type fakeVolume struct {
	ops.Unsupported
	diff     func(ops.DiffRequest) (ops.DiffResult, error)
	scan     func(ops.ScanRequest) ([]ops.ContentGroup, error)
	copyFile func(path string, w io.Writer) (uint32, error)
	closed   bool
}

func (f *fakeVolume) Diff(_ context.Context, req ops.DiffRequest) (ops.DiffResult, error) {
	return f.diff(req)
}

func (f *fakeVolume) Scan(_ context.Context, req ops.ScanRequest) ([]ops.ContentGroup, error) {
	return f.scan(req)
}

func (f *fakeVolume) CopyFile(_ context.Context, path string, w io.Writer) (uint32, error) {
	return f.copyFile(path, w)
}

// onFake makes commands on an unmounted store run on f.
func onFake(t *testing.T, f *fakeVolume) string {
	t.Helper()
	saved := openVolume
	openVolume = func(string) (ops.API, func() error, error) {
		return f, func() error { f.closed = true; return nil }, nil
	}
	t.Cleanup(func() { openVolume = saved })
	return t.TempDir() // a store no daemon holds
}

// stdout runs fn and returns what it printed on standard output.
func stdout(t *testing.T, fn func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	err = fn()
	os.Stdout = saved
	w.Close()
	return <-done, err
}

func TestDiffCommand(t *testing.T) {
	f := &fakeVolume{diff: func(req ops.DiffRequest) (ops.DiffResult, error) {
		if req.A != "/a" || req.B != "/b" || !req.Full {
			return ops.DiffResult{}, errors.New("unexpected request")
		}
		return ops.DiffResult{Method: "walk", Compared: 3, Entries: []ops.DiffEntry{
			{Status: "M", Path: "x", Type: "file", What: []string{"content"}, OldSize: 1, NewSize: 2048},
			{Status: "A", Path: "y", Type: "dir"},
		}}, nil
	}}
	store := onFake(t, f)
	out, err := stdout(t, func() error { return runDiff([]string{"--store", store, "--full", "/a", "/b"}) })
	if err != nil || out != "M\tx\nA\ty\n" {
		t.Fatalf("diff printed %q, %v", out, err)
	}
	out, err = stdout(t, func() error { return runDiff([]string{"--store", store, "--full", "--stat", "/a", "/b"}) })
	if err != nil || !strings.Contains(out, "M\tx\tfile\tcontent (1 B -> 2.0 KiB)\n") || !strings.Contains(out, "1 added, 0 deleted, 1 modified, 0 type changes; 3 entries compared (both trees walked)") {
		t.Fatalf("diff --stat printed %q, %v", out, err)
	}
	if !f.closed {
		t.Error("the volume the command opened was not closed")
	}
}

// TestScanCommandOnCopies: on a volume not mounted here the command gets a
// temporary copy of each content, under the file's name and mode, and
// the copies are gone afterwards.
func TestScanCommandOnCopies(t *testing.T) {
	f := &fakeVolume{
		scan: func(req ops.ScanRequest) ([]ops.ContentGroup, error) {
			return []ops.ContentGroup{{ID: "c1", Size: 5, Paths: []string{"/t/run.sh", "/u/run.sh"}}}, nil
		},
		copyFile: func(path string, w io.Writer) (uint32, error) {
			_, err := io.WriteString(w, "hello")
			return 0o100750, err
		},
	}
	store := onFake(t, f)
	seen := filepath.Join(t.TempDir(), "seen")
	out, err := stdout(t, func() error {
		return runScan([]string{"--json", "--store", store, "/t", "/u", "--", "sh", "-c",
			`printf '%s %s ' "$(basename "$1")" "$(stat -c %a "$1")"; cat "$1"; printf %s "$1" > "$2"`, "sh", "{}", seen})
	})
	if err != nil || !strings.Contains(out, `"output": "run.sh 750 hello"`) || !strings.Contains(out, `"/u/run.sh"`) {
		t.Fatalf("scan printed %s, %v", out, err)
	}
	copyPath, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(string(copyPath)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the copy %s is still there: %v", copyPath, err)
	}
}
