package tests

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fuseConnections is where the kernel's fusectl file system lists FUSE
// connections, each a directory with an abort file.
const fuseConnections = "/sys/fs/fuse/connections"

// fuseConnectionOf returns the fusectl name of the FUSE connection that
// serves the mount at mnt: the kernel's dev_t of its superblock.
func fuseConnectionOf(mnt string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(mnt, &st); err != nil {
		return "", err
	}
	dev := uint64(st.Dev)
	return fmt.Sprint(uint64(unix.Major(dev))<<20 | uint64(unix.Minor(dev))), nil
}

// abortFUSEConnection aborts a FUSE connection by its fusectl name, as
// `echo 1 > /sys/fs/fuse/connections/N/abort` does: every request waiting
// on it fails with ENOTCONN, and the daemon's device reads and writes
// fail. It mounts fusectl if nothing has.
func abortFUSEConnection(conn string) error {
	abort := filepath.Join(fuseConnections, conn, "abort")
	if _, err := os.Stat(abort); errors.Is(err, os.ErrNotExist) {
		if err := syscall.Mount("fusectl", fuseConnections, "fusectl", 0, ""); err != nil && !errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("mount fusectl: %w", err)
		}
	}
	return os.WriteFile(abort, []byte("1"), 0)
}

// TestAbortFUSEConnection: the connection found for a mount is the one
// that serves it: aborting it fails the mount's operations with ENOTCONN
// and the daemon exits.
func TestAbortFUSEConnection(t *testing.T) {
	v := newVolume(t)
	conn, err := fuseConnectionOf(v.Mnt)
	if err != nil {
		t.Fatal(err)
	}
	if err := abortFUSEConnection(conn); err != nil {
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
