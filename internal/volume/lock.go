package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrInUse is returned when another process has the volume open.
var ErrInUse = errors.New("volume is in use")

// lockFile takes the volume lock. The kernel drops a flock when its holder
// dies, so a killed daemon never leaves a stale lock behind.
func lockFile(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			if pid := LockHolder(dir); pid > 0 {
				return nil, fmt.Errorf("%s: %w by process %d (is it mounted? see 'doppel umount')", dir, ErrInUse, pid)
			}
			return nil, fmt.Errorf("%s: %w", dir, ErrInUse)
		}
		return nil, err
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}

// LockHolder returns the PID of the process holding dir's volume lock, or
// 0 if nobody holds it.
func LockHolder(dir string) int {
	path := filepath.Join(dir, "lock")
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err == nil {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return 0
	}
	b, _ := os.ReadFile(path)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
