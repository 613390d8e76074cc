package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/doppelfs/doppel/internal/mountinfo"
	"github.com/doppelfs/doppel/internal/volume"
)

func runUmount(args []string) error {
	fs := newFlags("umount", "[--lazy] [--force] MOUNTPOINT",
		"Unmount a doppel volume and wait until its daemon has flushed everything and exited.\n\n"+
			"A daemon that was killed but cannot end (one of its threads waits for a\n"+
			"directory that a process holds while it waits for the daemon's answer) has\n"+
			"its FUSE connection aborted first, without --force: it has nothing left to\n"+
			"flush. --force does the same to a daemon that is alive but does not answer.")
	lazy := fs.Bool("lazy", false, "detach now even if files are open; the daemon exits when they close")
	force := fs.Bool("force", false, "abort the mount's FUSE connection first (root only), for a daemon that\n"+
		"does not answer. Waiting requests fail with ECONNABORTED, later ones with\n"+
		"ENOTCONN; writes the daemon had not committed are lost, as after kill -9,\n"+
		"and recovery runs at the next mount. Implies --lazy")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for the daemon to finish")
	mp, err := parseMountpoint(fs, args)
	if err != nil {
		return err
	}
	m, err := doppelMountOf(mp)
	if err != nil {
		return err
	}
	pid := volume.LockHolder(m.Source)
	if *force || (pid > 0 && exiting(pid)) {
		if err := abortConnection(m); err != nil {
			return err
		}
		if *force {
			fmt.Fprintf(os.Stderr, "doppel umount: aborted the FUSE connection of %s\n", mp)
		} else {
			fmt.Fprintf(os.Stderr, "doppel umount: daemon %d was killed and had not ended; aborted its FUSE connection\n", pid)
		}
	}
	if err := unmount(mp, *lazy || *force); err != nil {
		return err
	}
	if pid <= 0 {
		return nil
	}
	deadline := time.Now().Add(*timeout)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			if *force {
				return fmt.Errorf("unmounted, but daemon %d did not end within %v; `kill -9 %d` ends it (what it had not committed is lost; recovery runs at the next mount)", pid, *timeout, pid)
			}
			return fmt.Errorf("unmounted, but daemon %d is still flushing after %v", pid, *timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// abortConnection aborts the FUSE connection of mount m, as the mount
// table gives it (the mount point itself is not touched: a daemon that
// does not answer would hold up a stat of it).
func abortConnection(m mountEntry) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("aborting the FUSE connection of %s needs root (/sys/fs/fuse/connections)", m.Point)
	}
	conn, err := mountinfo.FUSEConnection(m)
	if err != nil {
		return err
	}
	return mountinfo.AbortFUSEConnection(conn)
}

func unmount(mp string, lazy bool) error {
	if os.Geteuid() == 0 {
		flags := 0
		if lazy {
			flags = syscall.MNT_DETACH
		}
		err := syscall.Unmount(mp, flags)
		if errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("%s is busy (open files or a shell inside it?); close them or use --lazy", mp)
		}
		if err != nil {
			return fmt.Errorf("unmount %s: %w", mp, err)
		}
		return nil
	}
	bin, err := exec.LookPath("fusermount3")
	if err != nil {
		bin = "fusermount"
	}
	a := []string{"-u"}
	if lazy {
		a = append(a, "-z")
	}
	out, err := exec.Command(bin, append(a, mp)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("unmount %s: %s", mp, out)
	}
	return nil
}
