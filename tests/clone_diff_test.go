package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/testutil"
)

// diffResult is doppel diff --json.
type diffResult struct {
	Entries []struct {
		Status string   `json:"status"`
		Path   string   `json:"path"`
		Type   string   `json:"type"`
		What   []string `json:"what"`
	} `json:"entries"`
	Method      string `json:"method"`
	Compared    int    `json:"compared"`
	JournalRead int    `json:"journal_read"`
}

func diffJSON(t *testing.T, args ...string) diffResult {
	t.Helper()
	out := doppelOK(t, append([]string{"diff", "--json"}, args...)...)
	var res diffResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("doppel diff --json: %v\n%s", err, out)
	}
	return res
}

// TestCloneDiff checks doppel diff's output formats on a clone with one
// change of each kind, both ways, journal-driven and with --full, and on
// an unrelated copy made with cp -a.
func TestCloneDiff(t *testing.T) {
	v := newVolume(t)
	src, dst := v.path("src"), v.path("dst")
	testutil.Check(t, os.MkdirAll(filepath.Join(src, "dir"), 0o755))
	for _, name := range []string{"keep.txt", "chmod.txt", "gone.txt", "typechg", "xattr.txt", "dir/x"} {
		writeFile(t, filepath.Join(src, name), []byte(name+"\n"))
	}
	writeFile(t, filepath.Join(src, "mod.txt"), []byte("line 1\nline 2\nline 3\n"))
	doppelOK(t, "clone", src, dst)
	if out := doppelOK(t, "diff", src, dst); out != "" {
		t.Errorf("diff of a fresh clone:\n%s", out)
	}
	if out := doppelOK(t, "diff", "--json", src, dst); !strings.Contains(out, `"entries": []`) {
		t.Errorf("diff --json of a fresh clone:\n%s", out)
	}

	writeFile(t, filepath.Join(dst, "mod.txt"), []byte("line 1\nLINE TWO\nline 3\n"))
	testutil.Check(t, os.Chmod(filepath.Join(dst, "chmod.txt"), 0o600))
	testutil.Check(t, os.Remove(filepath.Join(dst, "gone.txt")))
	testutil.Check(t, os.Remove(filepath.Join(dst, "typechg")))
	testutil.Check(t, os.Mkdir(filepath.Join(dst, "typechg"), 0o755))
	writeFile(t, filepath.Join(dst, "dir", "new.txt"), []byte("new\n"))
	testutil.Check(t, unix.Setxattr(filepath.Join(dst, "xattr.txt"), "user.k", []byte("v"), 0))

	want := "M\tchmod.txt\nA\tdir/new.txt\nD\tgone.txt\nM\tmod.txt\nT\ttypechg\nM\txattr.txt\n"
	for _, args := range [][]string{{src, dst}, {"--name-status", src, dst}, {"--full", src, dst}} {
		if out := doppelOK(t, append([]string{"diff"}, args...)...); out != want {
			t.Errorf("doppel diff %s:\n%s\nwant:\n%s", strings.Join(args, " "), out, want)
		}
	}
	reversed := "M\tchmod.txt\nD\tdir/new.txt\nA\tgone.txt\nM\tmod.txt\nT\ttypechg\nM\txattr.txt\n"
	if out := doppelOK(t, "diff", dst, src); out != reversed {
		t.Errorf("doppel diff B A:\n%s\nwant:\n%s", out, reversed)
	}

	res := diffJSON(t, src, dst)
	if res.Method != "journal" || len(res.Entries) != 6 {
		t.Errorf("diff --json of a clone: method %q with %d entries, want journal with 6", res.Method, len(res.Entries))
	}
	whats := map[string]string{"chmod.txt": "mode", "mod.txt": "content", "xattr.txt": "xattrs"}
	types := map[string]string{"chmod.txt": "file", "dir/new.txt": "file", "typechg": "dir"}
	for _, e := range res.Entries {
		if w, ok := whats[e.Path]; ok && !slices.Contains(e.What, w) {
			t.Errorf("diff --json: %s changed %v, want %q among them", e.Path, e.What, w)
		}
		if ty, ok := types[e.Path]; ok && e.Type != ty {
			t.Errorf("diff --json: %s has type %q, want %q", e.Path, e.Type, ty)
		}
	}
	if full := diffJSON(t, "--full", src, dst); full.Method != "walk" || len(full.Entries) != 6 {
		t.Errorf("diff --full --json: method %q with %d entries, want walk with 6", full.Method, len(full.Entries))
	}

	stat := doppelOK(t, "diff", "--stat", src, dst)
	lines := strings.Split(strings.TrimSuffix(stat, "\n"), "\n")
	if len(lines) != 7 || !strings.HasPrefix(lines[3], "M\tmod.txt\tfile\t") || !strings.Contains(lines[3], "content") ||
		!strings.HasPrefix(lines[6], "1 added, 1 deleted, 3 modified, 1 type changes; ") {
		t.Errorf("doppel diff --stat:\n%s", stat)
	}
	patch := doppelOK(t, "diff", "--patch", src, dst)
	if !strings.HasPrefix(patch, want) || !strings.Contains(patch, "--- a/mod.txt\n+++ b/mod.txt\n") ||
		!strings.Contains(patch, "-line 2\n+LINE TWO\n") {
		t.Errorf("doppel diff --patch:\n%s", patch)
	}

	// Trees with no common origin are walked.
	cp := v.path("copy")
	if out, err := exec.Command("cp", "-a", src, cp).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v\n%s", err, out)
	}
	compareDirs(t, src, cp) // cp -a sets modes through ACLs, which doppel must refuse
	if res := diffJSON(t, src, cp); res.Method != "walk" || len(res.Entries) != 0 {
		t.Errorf("diff of a tree and its cp -a copy: %+v, want no entries, walked", res)
	}
	writeFile(t, filepath.Join(cp, "keep.txt"), []byte("changed\n"))
	if out := doppelOK(t, "diff", src, cp); out != "M\tkeep.txt\n" {
		t.Errorf("diff of unrelated trees after a change:\n%s", out)
	}
}

// TestCloneScan checks that doppel scan runs its command once per
// distinct content over a tree and three clones of it, reports every
// path, and with --since only for content new since a snapshot.
func TestCloneScan(t *testing.T) {
	v := newVolume(t)
	src := v.path("src")
	makeFiles(t, src, 3, 30, 7) // 27 distinct contents
	testutil.Check(t, os.Link(filepath.Join(src, "d00", "f00000"), filepath.Join(src, "hard")))
	doppelOK(t, "clone", "--lazy", src, v.path("c1"))
	doppelOK(t, "clone", src, v.path("c2"))
	doppelOK(t, "snapshot", src, v.path("c3"))
	trees := []string{src, v.path("c1"), v.path("c2"), v.path("c3")}
	log := filepath.Join(realTempDir(t), "log")
	scan := func(args ...string) (runs []string, out string) {
		t.Helper()
		testutil.Check(t, os.WriteFile(log, nil, 0o644))
		args = append(append([]string{"scan"}, args...), "--", "sh", "-c", `echo "$1" >> "$2"`, "sh", "{}", log)
		out = doppelOK(t, args...)
		b, err := os.ReadFile(log)
		testutil.Check(t, err)
		return strings.Fields(string(b)), out
	}

	runs, out := scan(append([]string{"--json"}, trees...)...)
	if len(runs) != 27 {
		t.Errorf("scan of a tree and 3 clones ran the command %d times, want 27 (one per distinct content)", len(runs))
	}
	var groups []struct {
		Paths    []string `json:"paths"`
		ExitCode int      `json:"exit_code"`
	}
	testutil.Check(t, json.Unmarshal([]byte(out), &groups))
	var all []string
	for _, g := range groups {
		first, err := os.ReadFile(v.path(g.Paths[0]))
		testutil.Check(t, err)
		for _, p := range g.Paths {
			if b, err := os.ReadFile(v.path(p)); err != nil || string(b) != string(first) {
				t.Errorf("scan grouped %s with %s, but their contents differ (%v)", p, g.Paths[0], err)
			}
		}
		if g.ExitCode != 0 {
			t.Errorf("scan reports exit code %d for %v", g.ExitCode, g.Paths)
		}
		all = append(all, g.Paths...)
	}
	var files []string
	for _, tree := range trees {
		for _, p := range relPaths(t, tree) {
			if st := lstat(t, filepath.Join(tree, p)); st.Mode&unix.S_IFMT == unix.S_IFREG {
				files = append(files, "/"+filepath.Base(tree)+"/"+p)
			}
		}
	}
	slices.Sort(all)
	slices.Sort(files)
	if !slices.Equal(all, files) {
		t.Errorf("scan reported the paths\n  %q\nwant every file once:\n  %q", all, files)
	}

	// Two new contents in one clone: two more runs; --since the snapshot
	// runs only those two.
	writeFile(t, v.path("c1", "new"), []byte("new content\n"))
	writeFile(t, v.path("c1", "d00", "f00000"), []byte("changed content\n"))
	if runs, _ := scan(trees...); len(runs) != 29 {
		t.Errorf("scan after two new contents ran %d times, want 29", len(runs))
	}
	runs, _ = scan("--since", v.path("c3"), src, v.path("c1"), v.path("c2"))
	slices.Sort(runs)
	if want := []string{v.path("c1", "d00", "f00000"), v.path("c1", "new")}; !slices.Equal(runs, want) {
		t.Errorf("scan --since the snapshot ran on %q, want %q", runs, want)
	}

	testutil.Check(t, os.Mkdir(v.path("empty"), 0o755))
	if out := doppelOK(t, "scan", "--json", v.path("empty"), "--", "true"); strings.TrimSpace(out) != "[]" {
		t.Errorf("scan --json of an empty tree prints %s, want []", out)
	}
	// A failing command makes the exit status non-zero.
	wantFailure(t, "failed for 27 of 27 contents", "scan", src, "--", "false")
}
