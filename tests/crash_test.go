package tests

import (
	"os"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestCrashRecovery kills the daemon with SIGKILL and checks that fsynced
// files survive, that the volume mounts again, and that no space leaks:
// deleting everything afterwards brings physical_bytes back to 0.
func TestCrashRecovery(t *testing.T) {
	v := newVolume(t)
	synced := map[string][]byte{
		"a": testutil.SeededBytes(40, 5*MiB),
		"b": testutil.SeededBytes(41, 123457),
		"c": concat(testutil.SeededBytes(40, MiB), testutil.SeededBytes(42, MiB)), // shares chunks with a
	}
	for name, data := range synced {
		writeFileSync(t, v.path(name), data)
	}
	// In flight at the crash: may or may not survive, but must not corrupt.
	if err := os.WriteFile(v.path("unsynced"), testutil.SeededBytes(43, 3*MiB), 0o644); err != nil {
		t.Fatal(err)
	}

	killDaemonNow(t, v)
	// The dead daemon's mount is still there; mount must detach it by
	// itself (the lock died with the daemon), with no manual step.
	v.mount(t)
	for name, data := range synced {
		checkFile(t, v.path(name), data)
	}
	if got, err := os.ReadFile(v.path("unsynced")); err == nil {
		t.Logf("the unsynced file survived with %d of %d bytes", len(got), 3*MiB)
	}

	for _, name := range []string{"a", "b", "c", "unsynced"} {
		if err := os.Remove(v.path(name)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	syncfsPath(t, v.Mnt)
	var st dfStats
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if st = v.df(t); st.PhysicalBytes == 0 || time.Now().After(deadline) {
			break
		}
	}
	if st.PhysicalBytes != 0 || st.Chunks != 0 || st.LogicalBytes != 0 {
		t.Errorf("after a crash, remount and deleting everything, df reports %v; want physical, chunks and logical 0", st.Raw)
	}
}
