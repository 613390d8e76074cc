package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestScanUnmounted checks doppel scan on an unmounted store: the same
// groups, paths and command results as on the mounted volume, the command
// given a copy with the file's name and permission bits, and a lazy clone
// left unmaterialized (before the change scan refused to run unmounted).
func TestScanUnmounted(t *testing.T) {
	v := newVolume(t)
	src := v.path("src")
	makeFiles(t, src, 2, 10, 11)
	testutil.Check(t, os.WriteFile(filepath.Join(src, "tool.sh"), []byte("#!/bin/sh\n"), 0o751))
	doppelOK(t, "clone", "--lazy", "--exclude", "d01", src, v.path("lazy"))
	writeFile(t, v.path("lazy-new"), []byte("only outside the clones\n"))
	stubs := func() uint64 {
		c, ok := cloneAt(v.clones(t), "/lazy")
		if !ok {
			t.Fatal("the lazy clone is not listed")
		}
		return c.Stubs
	}
	before := stubs()
	// The command prints what it was given: name, mode bits and content.
	cmd := []string{"--", "sh", "-c", `printf '%s %s ' "$(basename "$1")" "$(stat -c %a "$1")"; sha256sum < "$1"`, "sh", "{}"}
	type group struct {
		ID       string   `json:"id"`
		Size     int64    `json:"size"`
		Paths    []string `json:"paths"`
		ExitCode int      `json:"exit_code"`
		Output   string   `json:"output"`
	}
	scan := func(args ...string) []group {
		t.Helper()
		var gs []group
		out := doppelOK(t, append(append([]string{"scan", "--json"}, args...), cmd...)...)
		if err := json.Unmarshal([]byte(out), &gs); err != nil {
			t.Fatalf("scan --json: %v\n%s", err, out)
		}
		slices.SortFunc(gs, func(a, b group) int { return strings.Compare(a.ID, b.ID) })
		return gs
	}

	v.umount(t)
	offline := scan("--store", v.Store, "/src", "/lazy", "/lazy-new")
	v.mount(t)
	if after := stubs(); after != before {
		t.Errorf("the lazy clone has %d stub inodes after an offline scan, %d before: scan materialized it", after, before)
	}
	mounted := scan(src, v.path("lazy"), v.path("lazy-new"))
	if len(offline) < 3 {
		t.Errorf("offline scan found %d contents: %+v", len(offline), offline)
	}
	if !slices.EqualFunc(offline, mounted, func(a, b group) bool {
		return a.ID == b.ID && a.Size == b.Size && slices.Equal(a.Paths, b.Paths) && a.ExitCode == b.ExitCode && a.Output == b.Output
	}) {
		t.Errorf("scan unmounted:\n%+v\nmounted:\n%+v", offline, mounted)
	}
	seen := false
	for _, g := range offline {
		if slices.Contains(g.Paths, "/src/tool.sh") {
			seen = true
			if !strings.HasPrefix(g.Output, "tool.sh 751 ") {
				t.Errorf("the command saw %q for tool.sh, want its name and mode 751", g.Output)
			}
		}
	}
	if !seen {
		t.Errorf("offline scan did not report /src/tool.sh: %+v", offline)
	}
}
