package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// setKernelReadahead sets how far the kernel reads ahead of sequential
// readers of the file system mounted at mp (its backing device's
// read_ahead_kb in sysfs) to bytes. FUSE mounts start at 128 KiB whatever
// the daemon's MaxReadAhead says, so a cat of a file on a volume a
// network away sends one 128 KiB request at a time, each waiting for the
// metadata service (volume.KernelReadahead). Writing the file needs root;
// failing is only logged: reads work, they are slower.
func setKernelReadahead(mp string, bytes int64, log *slog.Logger) {
	var st unix.Stat_t
	if err := unix.Stat(mp, &st); err != nil {
		log.Warn("kernel readahead left as it is", "err", err)
		return
	}
	path := filepath.Join("/sys/class/bdi", fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)), "read_ahead_kb")
	if err := os.WriteFile(path, []byte(strconv.FormatInt(bytes>>10, 10)+"\n"), 0); err != nil {
		level := slog.LevelWarn
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EROFS) {
			level = slog.LevelInfo // expected when not root or in a container: every mount would warn
		}
		log.Log(context.Background(), level, "kernel readahead left as it is", "path", path, "err", err)
		return
	}
	log.Debug("kernel readahead set", "path", path, "kib", bytes>>10)
}
