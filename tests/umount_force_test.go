package tests

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUmountForceHungDaemon: `doppel umount --force` unmounts a volume
// whose daemon does not answer (stopped here with SIGSTOP) and frees the
// process that waits on it: its request fails (ECONNABORTED) instead of
// waiting for ever. The daemon, once it runs again, finds its connection
// gone and ends; what was fsync'd before is all there at the next mount.
func TestUmountForceHungDaemon(t *testing.T) {
	v := newVolume(t)
	data := bytes.Repeat([]byte("fsync'd before the hang "), 10000)
	if err := writeSynced(v.path("kept"), data); err != nil {
		t.Fatal(err)
	}
	pids := daemonPIDs(v.Mnt)
	if len(pids) == 0 {
		t.Fatal("no daemon found for the mount")
	}
	for _, p := range pids {
		if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			for _, p := range pids {
				syscall.Kill(p, syscall.SIGCONT)
			}
		}
	}
	t.Cleanup(resume) // before the volume's cleanup, whatever happens

	stat := make(chan error, 1)
	go func() {
		_, err := os.Stat(v.path("not-there"))
		stat <- err
	}()
	select {
	case err := <-stat:
		t.Fatalf("a lookup on the stopped daemon's mount returned: %v", err)
	case <-time.After(300 * time.Millisecond):
	}

	umount := make(chan error, 1)
	var out []byte
	go func() {
		var err error
		out, err = exec.Command(doppelBin, "umount", "--force", "--timeout", "30s", v.Mnt).CombinedOutput()
		umount <- err
	}()
	select {
	case err := <-stat:
		// ECONNABORTED for a request the daemon had read, ENOTCONN for
		// one still queued.
		if !errors.Is(err, syscall.ECONNABORTED) && !errors.Is(err, syscall.ENOTCONN) {
			t.Fatalf("the waiting lookup after umount --force: %v, want ECONNABORTED or ENOTCONN", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting lookup did not return after umount --force")
	}
	for deadline := time.Now().Add(20 * time.Second); isMounted(v.Mnt); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("umount --force did not detach the mount")
		}
	}
	resume()
	select {
	case err := <-umount:
		if err != nil {
			t.Fatalf("doppel umount --force: %v\n%s", err, out)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("doppel umount --force did not return after the daemon resumed")
	}
	if !strings.Contains(string(out), "aborted the FUSE connection") {
		t.Errorf("doppel umount --force said %q", out)
	}
	if left := daemonPIDs(v.Mnt); len(left) > 0 {
		t.Fatalf("daemon(s) %v still running after umount --force returned", left)
	}
	v.mounted = false
	v.mount(t)
	got, err := os.ReadFile(v.path("kept"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the file fsync'd before the hang: %d bytes, %v", len(got), err)
	}
	v.umount(t)
	v.fsck(t)
}
