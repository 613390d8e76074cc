package tests

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/testutil"
)

// Helpers of the clone tests (clone_*_test.go).

// cloneInfo is one entry of doppel clones --json.
type cloneInfo struct {
	Path      string    `json:"path"`
	Ino       uint64    `json:"ino"`
	Origin    string    `json:"origin"`
	Created   time.Time `json:"created"`
	Version   uint64    `json:"version"`
	Excludes  []string  `json:"excludes"`
	ReadOnly  bool      `json:"read_only"`
	Lazy      bool      `json:"lazy"`
	State     string    `json:"state"`
	Done      uint64    `json:"materialized_inodes"`
	Stubs     uint64    `json:"stub_inodes"`
	PinHeld   bool      `json:"pin_held"`
	Exclusive int64     `json:"exclusive_bytes"`
	MetaBytes int64     `json:"meta_bytes"`
}

// doppelOK runs doppel with args and fails the test if it fails.
func doppelOK(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runDoppel(2*time.Minute, args...)
	if err != nil {
		t.Fatalf("doppel %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// clones lists the mounted volume's clones (doppel clones --json).
func (v *volume) clones(t *testing.T, args ...string) []cloneInfo {
	t.Helper()
	out := doppelOK(t, append(append([]string{"clones", "--json"}, args...), v.Mnt)...)
	var list []cloneInfo
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("doppel clones --json: %v\n%s", err, out)
	}
	return list
}

// cloneAt returns the clone listed at path ("/"-rooted in the volume).
func cloneAt(list []cloneInfo, path string) (cloneInfo, bool) {
	for _, c := range list {
		if c.Path == path {
			return c, true
		}
	}
	return cloneInfo{}, false
}

// waitFor polls cond until it holds; the background work it waits for
// (materialization, freeing) has two minutes, which only a hang exceeds.
// cond also describes the state it saw, for the failure message.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after 2 minutes: %s", what, state)
		}
	}
}

// waitMaterialized waits until no clone of the volume is materializing.
func (v *volume) waitMaterialized(t *testing.T) {
	t.Helper()
	waitFor(t, "background materialization", func() (bool, string) {
		list := v.clones(t, "--no-space")
		for _, c := range list {
			if c.State == "materializing" {
				return false, fmt.Sprintf("%+v", list)
			}
		}
		return true, ""
	})
}

// copyOut copies a tree with cp -a to a new host directory: the reference
// a clone made at that instant must match.
func copyOut(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(realTempDir(t), "ref")
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v\n%s", src, dst, err, out)
	}
	return dst
}

// inodes maps every path below root (relative, "." for root) to its
// inode number.
func inodes(t *testing.T, root string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	testutil.Check(t, filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = st.Ino
		return nil
	}))
	return out
}

// relPaths lists the paths below root, relative and sorted, root excluded.
func relPaths(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for p := range inodes(t, root) {
		if p != "." {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// distinctInodes counts the inodes of a tree, root included.
func distinctInodes(t *testing.T, root string) int {
	t.Helper()
	seen := map[uint64]bool{}
	for _, ino := range inodes(t, root) {
		seen[ino] = true
	}
	return len(seen)
}

// writeFile writes a file, failing the test on error.
func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	testutil.Check(t, os.WriteFile(path, data, 0o644))
}

// makeFiles writes n small files, spread over dirs directories below
// root, with content depending on seed; every tenth is a copy of the one
// before it, so some content is shared.
func makeFiles(t *testing.T, root string, dirs, n int, seed uint64) {
	t.Helper()
	for d := range dirs {
		testutil.Check(t, os.MkdirAll(filepath.Join(root, fmt.Sprintf("d%02d", d)), 0o755))
	}
	for i := range n {
		c := i
		if i%10 == 9 {
			c = i - 1
		}
		data := []byte(fmt.Sprintf("seed %d file %d\n%s", seed, c, testutil.SeededBytes(seed+uint64(c), 64+c%200)))
		writeFile(t, filepath.Join(root, fmt.Sprintf("d%02d", i%dirs), fmt.Sprintf("f%05d", i)), data)
	}
}
