package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSharedJoin: `doppel join` makes a second store directory of a
// shared volume from its metadata URL alone (the data URL is the one the
// volume records), and marks the volume for several hosts. While the
// first store's daemon, mounted before the join, has the volume for one
// host, mounting it through the second is refused, and the error names
// the first daemon's session and says to mount it again; once the first
// is mounted again, both are mounted at once, the second reads what the
// first wrote, and doppel status lists both sessions.
func TestSharedJoin(t *testing.T) {
	first, _, _ := s3Volume(t, "join")
	data := []byte(strings.Repeat("written on the first host\n", 4000))
	if err := writeSynced(first.path("f"), data); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(first.Store, "shared.json"))
	if err != nil {
		t.Fatal(err)
	}
	var shared struct{ Meta, Schema string }
	if err := json.Unmarshal(raw, &shared); err != nil {
		t.Fatal(err)
	}
	second := &volume{Store: filepath.Join(realTempDir(t), "second"), Mnt: realTempDir(t), logPath: filepath.Join(t.TempDir(), "doppel.log")}
	t.Cleanup(func() { second.cleanup(t) })
	if out, err := runDoppel(time.Minute, "join", "--store", second.Store, "--meta", shared.Meta); err != nil ||
		!strings.Contains(string(out), shared.Schema) {
		t.Fatalf("doppel join: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, doppelBin, "mount", "--store", second.Store, second.Mnt).CombinedOutput()
	if err == nil {
		second.mounted = true
		t.Fatalf("a second store mounted the volume while the first has it mounted:\n%s", out)
	}
	for _, want := range []string{"in use", "session", first.Mnt, "for one host only", "mount it again"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refused mount does not say %q:\n%s", want, out)
		}
	}
	if isMounted(second.Mnt) {
		t.Fatal("the refused mount left a mount behind")
	}

	first.umount(t)
	first.mount(t)
	second.mount(t)
	got, err := os.ReadFile(second.path("f"))
	if err != nil || string(got) != string(data) {
		t.Fatalf("the second store reads %d bytes (%v), not what the first wrote", len(got), err)
	}
	e := doppelStatus(t, second.Mnt)[0]
	mounts := map[string]bool{}
	if e.Daemon != nil {
		for _, s := range e.Daemon.Sessions {
			mounts[s.Mount] = s.Alive
		}
	}
	if len(mounts) != 2 || !mounts[first.Mnt] || !mounts[second.Mnt] || !e.Daemon.MultiHost {
		t.Fatalf("status of the second store: %+v, want both hosts' sessions alive", e.Daemon)
	}
	first.umount(t)
	second.umount(t)
	second.fsckStrict(t)
}
