package tests

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestFrontAnswersClones checks that doppel itself answers clone and
// snapshot on a mounted volume, without doppel-core (which costs ~8 ms of
// package initialization per run), and hands everything else to
// doppel-core, which it reports missing clearly.
func TestFrontAnswersClones(t *testing.T) {
	v := newVolume(t)
	src := v.path("src")
	makeFiles(t, src, 2, 3, 2)
	noCore := append(os.Environ(), "DOPPEL_CORE=/nonexistent/doppel-core")
	for _, args := range [][]string{
		{"clone", "--lazy", "--exclude", "d00", src, v.path("c")},
		{"snapshot", src, v.path("s")},
		{"clone", "--json", src, v.path("j")},
	} {
		cmd := exec.Command(doppelBin, args...)
		cmd.Env = noCore
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("doppel %v without doppel-core: %v\n%s", args, err, out)
		}
	}
	if _, err := os.Stat(v.path("c", "d00")); !os.IsNotExist(err) {
		t.Errorf("the excluded d00 is in the clone: %v", err)
	}
	if err := os.WriteFile(v.path("s", "new"), nil, 0o644); err == nil {
		t.Error("the snapshot accepted a new file")
	}
	// Anything else needs doppel-core.
	cmd := exec.Command(doppelBin, "df", v.Mnt)
	cmd.Env = noCore
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "/nonexistent/doppel-core") {
		t.Errorf("doppel df without doppel-core: %v\n%s", err, out)
	}
}
