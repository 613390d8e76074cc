package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/doppelfs/doppel/internal/volume"
)

type mountFlags struct {
	store      string
	foreground bool
	logLevel   string
	notifyFd   int
	fuseDebug  bool
	dedup      string
}

func runMount(args []string) error {
	fs := newFlags("mount", "[--store DIR] [-f] [--dedup inline|background] MOUNTPOINT",
		"Mount a volume on MOUNTPOINT, an existing empty directory. Returns once the\n"+
			"mount is ready, with the daemon running in the background (its log goes to\n"+
			"STORE/daemon.log); -f keeps it in the foreground.\n"+
			"Unmount with 'doppel umount MOUNTPOINT' or by sending the daemon SIGTERM.")
	var mf mountFlags
	fs.StringVar(&mf.store, "store", "", storeHelp)
	fs.BoolVar(&mf.foreground, "f", false, "stay in the foreground")
	logLevel := logFlag(fs, "info")
	fs.BoolVar(&mf.fuseDebug, "fuse-debug", false, "log go-fuse's dump of every FUSE request (very verbose; at level info);\n"+
		"--log-level debug logs each request's operation, inode and duration more briefly")
	fs.StringVar(&mf.dedup, "dedup", "inline", "inline: look every new chunk up in the volume's chunk table before storing it;\n"+
		"background: store new data at once, look it up while it uploads, and merge it into the chunk\n"+
		"table as it commits (a write-heavy host of a shared volume waits for no lookup; a chunk the\n"+
		"volume held is stored again and that copy returned later: the same final space, more bytes\n"+
		"written)")
	fs.IntVar(&mf.notifyFd, "notify-fd", 0, "internal: file descriptor on which to report readiness")
	mp, err := parseMountpoint(fs, args)
	if err != nil {
		return err
	}
	mf.logLevel = *logLevel
	if mf.dedup != "inline" && mf.dedup != "background" {
		return usagef("--dedup %q: want inline or background", mf.dedup)
	}
	dir, err := storeDir(mf.store)
	if err != nil {
		return err
	}
	if err := checkMountable(dir, mp); err != nil {
		return err
	}
	if mf.foreground {
		return serve(dir, mp, mf)
	}
	return spawnDaemon(dir, mp, mf)
}

// checkMountable reports, before any daemon starts, the reasons a mount
// would fail, in words a user can act on.
func checkMountable(dir, mp string) error {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return errors.New("/dev/fuse is missing: this machine cannot serve FUSE file systems (load the fuse module or run with --device /dev/fuse)")
	}
	if m, busy, err := findMount(mp); err != nil {
		return err
	} else if busy {
		if m.FSType == fuseType && !awaitDyingHolder(m.Source) {
			// Killed, and one of its threads waits for a directory a
			// process holds while it waits for the daemon: aborting the
			// connection lets both go (it has nothing left to flush).
			if err := abortConnection(m); err != nil {
				return fmt.Errorf("mount point %s holds the mount of a killed daemon that has not ended: %w", mp, err)
			}
			fmt.Fprintf(os.Stderr, "doppel mount: aborted the FUSE connection of %s, whose daemon was killed and had not ended\n", mp)
			if !awaitDyingHolder(m.Source) {
				return fmt.Errorf("mount point %s holds the mount of a killed daemon that does not end even with its FUSE connection aborted", mp)
			}
		}
		if !staleDoppelMount(m) {
			return fmt.Errorf("mount point %s is busy: something is already mounted there", mp)
		}
		// Left by a daemon that was killed: nothing serves it any more.
		if err := unmount(mp, true); err != nil {
			return fmt.Errorf("mount point %s holds a stale doppel mount that could not be detached: %w", mp, err)
		}
		fmt.Fprintf(os.Stderr, "doppel mount: detached a stale mount on %s left by a daemon that died\n", mp)
	}
	if err := checkMountPoint(mp); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			if _, err := exec.LookPath("fusermount"); err != nil {
				return errors.New("fusermount3 not found: install fuse3 (apt-get install fuse3)")
			}
		}
	}
	if err := volume.CheckFormat(dir); err != nil {
		return err
	}
	if pid := volume.LockHolder(dir); pid > 0 {
		return fmt.Errorf("store %s is in use by process %d (already mounted?)", dir, pid)
	}
	return nil
}

// checkMountPoint requires mp to be an existing, empty directory: a mount
// would hide whatever it holds.
func checkMountPoint(mp string) error {
	st, err := os.Stat(mp)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("mount point %s does not exist; create it first (mkdir %s)", mp, mp)
	}
	if err != nil {
		return fmt.Errorf("mount point: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("mount point %s is not a directory", mp)
	}
	f, err := os.Open(mp)
	if err != nil {
		return fmt.Errorf("mount point: %w", err)
	}
	defer f.Close()
	if names, _ := f.Readdirnames(1); len(names) > 0 {
		return fmt.Errorf("mount point %s is not empty (it holds %q, ...): the volume would hide its files; use an empty directory", mp, names[0])
	}
	return nil
}

// spawnDaemon starts `doppel mount -f` in its own session and waits until
// it reports the mount ready or fails.
func spawnDaemon(dir, mp string, mf mountFlags) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(filepath.Join(dir, "daemon.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	args := []string{"mount", "-f", "--store", dir, "--log-level", mf.logLevel, "--notify-fd", "3"}
	if mf.dedup != "inline" {
		args = append(args, "--dedup", mf.dedup)
	}
	if mf.fuseDebug {
		args = append(args, "--fuse-debug")
	}
	cmd := exec.Command(self, append(args, mp)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start daemon: %w", err)
	}
	w.Close()
	go cmd.Wait() // reap it if it dies while we wait
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		ready <- strings.TrimSpace(line)
	}()
	select {
	case msg := <-ready:
		if msg == "ready" {
			return nil
		}
		if msg == "" {
			msg = "daemon exited before the mount was ready; see " + filepath.Join(dir, "daemon.log")
		}
		return errors.New(strings.TrimPrefix(msg, "error: "))
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		return errors.New("daemon did not get the mount ready within 60 s; see " + filepath.Join(dir, "daemon.log"))
	}
}

// awaitDyingHolder waits up to 10 s while the lock of the store in dir is
// held by a process that was killed and is still exiting: its main thread
// is a zombie until its last threads finish their system calls, and the
// lock is released only then. False if it is still exiting.
func awaitDyingHolder(dir string) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if pid := volume.LockHolder(dir); pid == 0 || !exiting(pid) {
			return true
		}
	}
	return false
}

// exiting reports whether process pid is gone or a zombie.
func exiting(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

// staleDoppelMount reports whether m is a doppel mount whose daemon is gone:
// the daemon holds its store's lock for as long as it runs.
func staleDoppelMount(m mountEntry) bool {
	return m.FSType == fuseType && volume.LockHolder(m.Source) == 0
}
