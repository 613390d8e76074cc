package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// fsckProblem is one problem in doppel fsck --json output.
type fsckProblem struct {
	Kind     string `json:"kind"`
	Severity string `json:"severity"`
	Path     string `json:"path"`
	Detail   string `json:"detail"`
}

// fsck runs doppel fsck --json on the unmounted volume's store and fails
// the test on any problem but reclaimable space.
func (v *volume) fsck(t testing.TB) {
	t.Helper()
	v.runFsck(t, false)
}

// fsckStrict is fsck that also fails on reclaimable space: after a crash
// and a remount nothing may be left over.
func (v *volume) fsckStrict(t testing.TB) {
	t.Helper()
	v.runFsck(t, true)
}

// fsckOnline checks the mounted volume through its daemon (on one
// snapshot, while it is in use) and fails the test on any problem but
// reclaimable space.
func (v *volume) fsckOnline(t testing.TB) {
	t.Helper()
	if !v.mounted {
		t.Fatal("an online check needs the volume mounted")
	}
	v.fsckWith(t, false, v.Mnt)
}

func (v *volume) runFsck(t testing.TB, strict bool) {
	t.Helper()
	if v.mounted {
		t.Fatal("fsck needs the volume unmounted")
	}
	v.fsckWith(t, strict, "--store", v.Store)
}

// fsckWith runs doppel fsck --json with args (where the volume is).
func (v *volume) fsckWith(t testing.TB, strict bool, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, doppelBin, append(append([]string{"fsck"}, args...), "--json")...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("doppel fsck: %v\n%s%s", err, stdout.Bytes(), stderr.Bytes())
	}
	var rep struct {
		Clean    bool          `json:"clean"`
		Problems []fsckProblem `json:"problems"`
		Inodes   int64         `json:"inodes"`
		Chunks   int64         `json:"chunks"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("doppel fsck output is not the expected JSON: %v\n%s", err, stdout.Bytes())
	}
	bad := 0
	for _, p := range rep.Problems {
		if p.Severity == "reclaimable" && !strict {
			t.Logf("fsck: %s %s %s", p.Kind, p.Path, p.Detail)
			continue
		}
		bad++
		t.Errorf("fsck: %s\t%s\t%s", p.Kind, p.Path, p.Detail)
	}
	if bad > 0 || !rep.Clean || (err != nil) != (bad > 0) {
		t.Fatalf("doppel fsck found %d problems (clean=%v, exit %v) on a volume used correctly", bad, rep.Clean, err)
	}
	t.Logf("fsck: clean (%d inodes, %d chunks)", rep.Inodes, rep.Chunks)
}

// TestFsckExitStatus checks doppel fsck's contract: a mounted volume is
// checked online through its daemon, 0 when clean, 1 with a KIND PATH
// DETAIL line for damage.
func TestFsckExitStatus(t *testing.T) {
	v := newVolume(t)
	writeFileSync(t, v.path("f"), testutil.SeededBytes(7, 300<<10))
	for _, args := range [][]string{{"--store", v.Store}, {v.Mnt}, {"--repair", v.Mnt}} {
		out, err := runDoppel(time.Minute, append([]string{"fsck"}, args...)...)
		if err != nil || !bytes.Contains(out, []byte("checked online")) || !bytes.HasSuffix(out, []byte("\nclean\n")) {
			t.Fatalf("fsck %v of a clean mounted volume: %v\n%s", args, err, out)
		}
	}
	v.umount(t)
	if out, err := runDoppel(time.Minute, "fsck", "--store", v.Store, "--verify-data"); err != nil || !bytes.Contains(out, []byte("\nclean\n")) {
		t.Fatalf("fsck of a clean volume: %v\n%s", err, out)
	}
	needSegmentFiles(t)
	if err := os.Truncate(filepath.Join(v.Store, "chunks", "seg-00000001"), 5000); err != nil {
		t.Fatal(err)
	}
	out, err := runDoppel(time.Minute, "fsck", "--store", v.Store)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !bytes.Contains(out, []byte("short-chunk\t/f\t")) {
		t.Fatalf("fsck of a truncated segment: %v\n%s", err, out)
	}
}
