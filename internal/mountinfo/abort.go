package mountinfo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// FUSEConnections is where the kernel's fusectl file system lists FUSE
// connections, each a directory with an abort file.
const FUSEConnections = "/sys/fs/fuse/connections"

// FUSEConnection returns the fusectl name of the FUSE connection that
// serves mount m: the kernel's own dev_t of its superblock (major << 20 |
// minor), from the mount table, so that a daemon that no longer answers
// is never asked (a stat of the mount point would wait for it).
func FUSEConnection(m Entry) (string, error) {
	var major, minor uint64
	if _, err := fmt.Sscanf(m.Dev, "%d:%d", &major, &minor); err != nil {
		return "", fmt.Errorf("device number %q of the mount on %s: %w", m.Dev, m.Point, err)
	}
	return fmt.Sprint(major<<20 | minor), nil
}

// AbortFUSEConnection aborts a FUSE connection by its fusectl name, as
// `echo 1 > /sys/fs/fuse/connections/N/abort` does: requests the daemon
// had read fail with ECONNABORTED, the others and later ones with
// ENOTCONN, and the daemon's reads and writes of its device fail, so it
// ends. It mounts fusectl if nothing
// has. Root only.
func AbortFUSEConnection(conn string) error {
	abort := filepath.Join(FUSEConnections, conn, "abort")
	if _, err := os.Stat(abort); errors.Is(err, os.ErrNotExist) {
		if err := syscall.Mount("fusectl", FUSEConnections, "fusectl", 0, ""); err != nil && !errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("mount fusectl on %s: %w", FUSEConnections, err)
		}
	}
	if err := os.WriteFile(abort, []byte("1"), 0); err != nil {
		return fmt.Errorf("abort FUSE connection %s: %w", conn, err)
	}
	return nil
}
