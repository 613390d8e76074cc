package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// Real programs with demanding I/O patterns: tar, git and sqlite3 only
// need to succeed and round-trip their content.

func TestTar(t *testing.T) {
	v := newVolume(t)
	host := realTempDir(t)
	tarball := v.path("internal.tar")
	// Archive into the mount, then extract that archive both on the host
	// and in the mount; compare the two. (Not against internal/ itself,
	// which other work may change meanwhile.)
	runTool(t, moduleRoot, nil, "tar", "-cf", tarball, "internal")
	testutil.Check(t, os.Mkdir(v.path("x"), 0o755))
	runTool(t, host, nil, "tar", "-xf", tarball)
	runTool(t, v.path("x"), nil, "tar", "-xf", tarball)
	compareDirs(t, filepath.Join(host, "internal"), v.path("x", "internal"))

	// And read it all back out of the mount through tar.
	again := realTempDir(t)
	runTool(t, v.path("x"), nil, "tar", "-cf", filepath.Join(again, "again.tar"), "internal")
	runTool(t, again, nil, "tar", "-xf", "again.tar")
	compareDirs(t, filepath.Join(host, "internal"), filepath.Join(again, "internal"))
}

func TestGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	v := newVolume(t)
	home := realTempDir(t)
	env := []string{
		"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Doppel Test", "GIT_AUTHOR_EMAIL=test@doppel.invalid",
		"GIT_COMMITTER_NAME=Doppel Test", "GIT_COMMITTER_EMAIL=test@doppel.invalid",
	}
	repo := v.path("repo")
	testutil.Check(t, os.MkdirAll(filepath.Join(repo, "src", "deep"), 0o755))
	files := map[string][]byte{
		"README":            []byte("hello from doppel\n"),
		"src/data.bin":      testutil.SeededBytes(20, 3*MiB),
		"src/deep/copy.bin": testutil.SeededBytes(20, 3*MiB), // same blob twice
		"src/small.txt":     []byte(strings.Repeat("line\n", 1000)),
	}
	for name, data := range files {
		testutil.Check(t, os.WriteFile(filepath.Join(repo, name), data, 0o644))
	}
	git := func(dir string, args ...string) string { return runTool(t, dir, env, "git", args...) }
	git(repo, "init", "-q")
	git(repo, "add", "-A")
	git(repo, "commit", "-q", "-m", "first")
	testutil.Check(t, os.WriteFile(filepath.Join(repo, "README"), []byte("changed\n"), 0o644))
	git(repo, "commit", "-q", "-am", "second")
	git(repo, "gc", "-q")
	git(repo, "fsck", "--full", "--strict")
	if out := git(repo, "status", "--porcelain"); out != "" {
		t.Errorf("git status after commit not clean:\n%s", out)
	}
	if n := strings.TrimSpace(git(repo, "rev-list", "--count", "HEAD")); n != "2" {
		t.Errorf("git rev-list --count HEAD = %s, want 2", n)
	}

	// Delete and restore from the object store; clone within the mount.
	testutil.Check(t, os.Remove(filepath.Join(repo, "src", "data.bin")))
	git(repo, "checkout", "--", "src/data.bin")
	git(v.Mnt, "clone", "-q", repo, "clone")
	files["README"] = []byte("changed\n")
	for name, data := range files {
		checkFile(t, filepath.Join(repo, name), data)
		checkFile(t, v.path("clone", name), data)
	}
}

func TestSQLite(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("sqlite3 not installed")
	}
	v := newVolume(t)
	env := []string{"HOME=" + realTempDir(t)} // no ~/.sqliterc
	for _, mode := range []string{"delete", "wal"} {
		t.Run(mode, func(t *testing.T) {
			db := v.path("test-" + mode + ".db")
			sql := func(script string) string {
				return strings.TrimSpace(runTool(t, v.Mnt, env, "sqlite3", "-batch", "-bail", db, script))
			}
			if got := sql("PRAGMA journal_mode=" + mode + ";"); got != mode {
				t.Fatalf("journal_mode = %q, want %q", got, mode)
			}
			sql(`CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);
				BEGIN;
				WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 20000)
				INSERT INTO t SELECT x, hex(randomblob(64)) FROM c;
				COMMIT;
				BEGIN; DELETE FROM t WHERE id % 2 = 0; ROLLBACK;
				UPDATE t SET v = 'x' WHERE id % 1000 = 0;`)
			// A new process, so the data comes from the file system.
			if got := sql("SELECT count(*), sum(v = 'x') FROM t; PRAGMA integrity_check;"); got != "20000|20\nok" {
				t.Errorf("after the transactions: %q, want \"20000|20\\nok\"", got)
			}
			if mode == "wal" {
				sql("PRAGMA wal_checkpoint(TRUNCATE);")
			}
		})
	}
	v.remount(t)
	for _, mode := range []string{"delete", "wal"} {
		out := runTool(t, v.Mnt, env, "sqlite3", "-batch", "-bail", v.path("test-"+mode+".db"), "SELECT count(*) FROM t; PRAGMA integrity_check;")
		if got := strings.TrimSpace(out); got != "20000\nok" {
			t.Errorf("%s database after remount: %q", mode, got)
		}
	}
}

// runTool runs a program in dir and returns its stdout; it fails the test,
// with all output, if the program fails.
func runTool(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s (in %s): %v\n%s%s", name, strings.Join(args, " "), dir, err, out, stderr.String())
	}
	return string(out)
}

// compareDirs requires two trees to match in everything the model compares.
func compareDirs(t *testing.T, want, got string) {
	t.Helper()
	w, err := snapshotTree(want)
	testutil.Check(t, err)
	g, err := snapshotTree(got)
	testutil.Check(t, err)
	if d := diffTrees(w, g); len(d) > 0 {
		if len(d) > 30 {
			d = d[:30]
		}
		t.Errorf("%s differs from %s (ref=%s):\n  %s", got, want, want, strings.Join(d, "\n  "))
	}
}

// TestRsync copies a tree in with rsync -aH (hard links, modes, times),
// updates it in place with --inplace and checks rsync finds nothing left
// to do, which needs exact sizes and nanosecond mtimes.
func TestRsync(t *testing.T) {
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Skip("rsync not installed")
	}
	v := newVolume(t)
	src := realTempDir(t)
	testutil.Check(t, os.MkdirAll(filepath.Join(src, "a", "b"), 0o750))
	testutil.Check(t, os.WriteFile(filepath.Join(src, "a", "big"), testutil.SeededBytes(31, 5*MiB), 0o640))
	testutil.Check(t, os.WriteFile(filepath.Join(src, "a", "b", "small"), []byte("small\n"), 0o600))
	testutil.Check(t, os.Link(filepath.Join(src, "a", "big"), filepath.Join(src, "a", "b", "hard")))
	testutil.Check(t, os.Symlink("../big", filepath.Join(src, "a", "b", "link")))
	runTool(t, src, nil, "rsync", "-aH", src+"/", v.path("dst")+"/")
	compareDirs(t, src, v.path("dst"))
	if a, b := inodeOf(t, v.path("dst", "a", "big")), inodeOf(t, v.path("dst", "a", "b", "hard")); a != b {
		t.Errorf("rsync -H: hard link not preserved (%d vs %d)", a, b)
	}

	// Change the middle of the big file and sync it in place.
	f, err := os.OpenFile(filepath.Join(src, "a", "big"), os.O_WRONLY, 0)
	testutil.Check(t, err)
	_, err = f.WriteAt(testutil.SeededBytes(32, 100000), 2*MiB)
	testutil.Check(t, err)
	testutil.Check(t, f.Close())
	// rsync's quick check compares size and whole-second mtime: move the
	// mtime on so that the same-size change is seen.
	later := time.Now().Add(10 * time.Second)
	testutil.Check(t, os.Chtimes(filepath.Join(src, "a", "big"), later, later))
	runTool(t, src, nil, "rsync", "-aH", "--inplace", src+"/", v.path("dst")+"/")
	compareDirs(t, src, v.path("dst"))
	if out := runTool(t, src, nil, "rsync", "-aHn", "--itemize-changes", src+"/", v.path("dst")+"/"); strings.TrimSpace(out) != "" {
		t.Errorf("rsync still sees differences after sync:\n%s", out)
	}
}

func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	testutil.Check(t, err)
	return st.Sys().(*syscall.Stat_t).Ino
}

// TestMakeAndGoBuild builds a small Go program with make inside the mount:
// make's timestamp checks, the compiler's temp files and renames, and
// running a binary from the volume.
func TestMakeAndGoBuild(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not installed")
	}
	v := newVolume(t)
	dir := v.path("hello")
	testutil.Check(t, os.MkdirAll(dir, 0o755))
	testutil.Check(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.21\n"), 0o644))
	testutil.Check(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from doppel\") }\n"), 0o644))
	testutil.Check(t, os.WriteFile(filepath.Join(dir, "Makefile"), []byte("hello: main.go go.mod\n\t"+goBin+" build -o hello .\n"), 0o644))
	env := []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOCACHE=" + realTempDir(t), "HOME=" + realTempDir(t)}
	runTool(t, dir, env, "make")
	if out := runTool(t, dir, nil, filepath.Join(dir, "hello")); strings.TrimSpace(out) != "hello from doppel" {
		t.Fatalf("built program printed %q", out)
	}
	if out := runTool(t, dir, env, "make"); !strings.Contains(out, "up to date") {
		t.Errorf("second make rebuilt (timestamps not kept?):\n%s", out)
	}
}
