package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/doppelfs/doppel/internal/volume"
)

func runUmount(args []string) error {
	fs := newFlags("umount", "[--lazy] MOUNTPOINT",
		"Unmount a doppel volume and wait until its daemon has flushed everything and exited.")
	lazy := fs.Bool("lazy", false, "detach now even if files are open; the daemon exits when they close")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for the daemon to finish")
	mp, err := parseMountpoint(fs, args)
	if err != nil {
		return err
	}
	store, err := doppelStoreOf(mp)
	if err != nil {
		return err
	}
	pid := volume.LockHolder(store)
	if err := unmount(mp, *lazy); err != nil {
		return err
	}
	if pid <= 0 {
		return nil
	}
	deadline := time.Now().Add(*timeout)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("unmounted, but daemon %d is still flushing after %v", pid, *timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
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
