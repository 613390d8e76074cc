package tests

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// asUserEnv holds the credentials ("uid:gid,gid...") a re-executed test
// binary takes before the system call its arguments name (see
// runAsUser); set, TestMain runs that call instead of the tests.
const asUserEnv = "DOPPEL_TESTS_AS_USER"

// user is who a system call runs as: pjdfstest's -u/-g.
type user struct {
	uid    uint32
	groups []uint32 // the first is the primary group
}

func (u *user) String() string {
	gs := make([]string, len(u.groups))
	for i, g := range u.groups {
		gs[i] = strconv.Itoa(int(g))
	}
	return fmt.Sprintf("%d:%s", u.uid, strings.Join(gs, ","))
}

// runAsUser makes one system call, op ("chown" or "lchown") of path to
// uid and gid, as u (nil: as root, in the test's process) and returns its
// errno. The child opens path's directory while still root and drops its
// privileges before the call, so test directories need not be searchable
// by u, nor the test binary executable by u.
func runAsUser(t *testing.T, u *user, op, path string, uid, gid int) error {
	t.Helper()
	args := []string{op, filepath.Dir(path), filepath.Base(path), strconv.Itoa(uid), strconv.Itoa(gid)}
	if u == nil {
		return asUserCall(args)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), asUserEnv+"="+u.String())
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit) && exit.ExitCode() > 0 && exit.ExitCode() < 200:
		return syscall.Errno(exit.ExitCode())
	default:
		t.Fatalf("%s %v as %s: %v %s", op, args, u, err, out)
		return nil
	}
}

// runAsUserHelper is the child's side: the errno is its exit status.
func runAsUserHelper(creds string, args []string) int {
	err := asUserCall(args, creds)
	var errno syscall.Errno
	switch {
	case err == nil:
		return 0
	case errors.As(err, &errno):
		return int(errno)
	default:
		fmt.Fprintln(os.Stderr, err)
		return 255
	}
}

// asUserCall runs args (op dir name uid gid), first taking creds if given.
func asUserCall(args []string, creds ...string) error {
	if len(args) != 5 {
		return fmt.Errorf("want op dir name uid gid, got %q", args)
	}
	uid, err1 := strconv.Atoi(args[3])
	gid, err2 := strconv.Atoi(args[4])
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	dir, err := unix.Open(args[1], unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", args[1], err)
	}
	defer unix.Close(dir)
	if len(creds) > 0 {
		if err := takeCredentials(creds[0]); err != nil {
			return err
		}
	}
	flags := 0
	switch args[0] {
	case "chown":
	case "lchown":
		flags = unix.AT_SYMLINK_NOFOLLOW
	default:
		return fmt.Errorf("unknown call %q", args[0])
	}
	return unix.Fchownat(dir, args[2], uid, gid, flags)
}

// takeCredentials drops root for "uid:gid,gid...", in every thread.
func takeCredentials(creds string) error {
	u, gs, ok := strings.Cut(creds, ":")
	uid, err := strconv.Atoi(u)
	if !ok || err != nil || gs == "" {
		return fmt.Errorf("bad credentials %q", creds)
	}
	var groups []int
	for g := range strings.SplitSeq(gs, ",") {
		n, err := strconv.Atoi(g)
		if err != nil {
			return fmt.Errorf("bad credentials %q", creds)
		}
		groups = append(groups, n)
	}
	if err := syscall.Setgroups(groups); err != nil {
		return fmt.Errorf("setgroups: %v", err)
	}
	if err := syscall.Setresgid(groups[0], groups[0], groups[0]); err != nil {
		return fmt.Errorf("setresgid: %v", err)
	}
	if err := syscall.Setresuid(uid, uid, uid); err != nil {
		return fmt.Errorf("setresuid: %v", err)
	}
	return nil
}
