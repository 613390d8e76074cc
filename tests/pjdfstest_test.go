package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPjdfstest runs pjdfstest (github.com/pjd/pjdfstest: about 8,800
// POSIX checks of chmod, chown, link, mkdir, mkfifo, open, rename, rmdir,
// symlink, truncate, unlink, utimensat, as root and as other users) in a
// volume of the matrix's kind, when DOPPEL_PJDFSTEST names a checkout of
// its source; the test builds it there if it is not built (autoconf,
// automake and gcc). Not in make test: no package registry this project's
// machines reach serves pjdfstest, so CI cannot fetch it.
//
//	DOPPEL_PJDFSTEST=/src/pjdfstest go test -run TestPjdfstest -v ./tests
func TestPjdfstest(t *testing.T) {
	src := os.Getenv("DOPPEL_PJDFSTEST")
	if src == "" {
		t.Skip("DOPPEL_PJDFSTEST is not set (a checkout of github.com/pjd/pjdfstest)")
	}
	if _, err := exec.LookPath("prove"); err != nil {
		t.Skip("prove (perl) is not installed")
	}
	if _, err := os.Stat(filepath.Join(src, "pjdfstest")); err != nil {
		build := exec.Command("sh", "-c", "autoreconf -ifs && ./configure && make pjdfstest")
		build.Dir = src
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building pjdfstest in %s (needs autoconf, automake, gcc): %v\n%s", src, err, out)
		}
	}
	v := newVolume(t)
	// pjdfstest works as other users too: they must reach the directory.
	for d := v.Mnt; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()+"/"); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	work := v.path("pjdfstest")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	prove := exec.CommandContext(ctx, "prove", "-r", filepath.Join(src, "tests"))
	prove.Dir = work
	out, err := prove.CombinedOutput()
	summary := string(out)
	if i := strings.Index(summary, "Test Summary Report"); i >= 0 {
		summary = summary[i:]
	} else if lines := strings.Split(strings.TrimSpace(summary), "\n"); len(lines) > 3 {
		summary = strings.Join(lines[len(lines)-3:], "\n")
	}
	if err != nil {
		t.Fatalf("pjdfstest: %v\n%s", err, summary)
	}
	t.Logf("pjdfstest:\n%s", summary)
	v.umount(t)
	v.fsck(t)
}
