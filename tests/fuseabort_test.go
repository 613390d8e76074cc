package tests

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/mountinfo"
)

// fuseConnectionOf returns the fusectl name of the FUSE connection that
// serves the mount at mnt, from the mount table.
func fuseConnectionOf(mnt string) (string, error) {
	m, ok, err := mountinfo.Find(mnt)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%s is not a mount point", mnt)
	}
	return mountinfo.FUSEConnection(m)
}

// TestAbortFUSEConnection: the connection found for a mount (from the
// mount table's device number) is the one that serves it: aborting it fails the mount's operations with ENOTCONN
// and the daemon exits.
func TestAbortFUSEConnection(t *testing.T) {
	v := newVolume(t)
	conn, err := fuseConnectionOf(v.Mnt)
	if err != nil {
		t.Fatal(err)
	}
	if err := mountinfo.AbortFUSEConnection(conn); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(v.path("x")); !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("stat after the abort: %v, want ENOTCONN", err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(daemonPIDs(v.Mnt)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not exit after its connection was aborted")
		}
	}
}
