package tests

import (
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMultiHostLocks: fcntl and flock locks bind across hosts
// (docs/SHARED.md, 9.4). A write lock on host a makes b's F_SETLK fail
// and F_GETLK report it; b's F_SETLKW waits until a unlocks; a close
// releases the closer's locks; flock locks conflict on one host (another
// process) and across hosts; when a's daemon is killed holding a lock, b
// gets it once a's session is seen dead. fsck is clean after.
func TestMultiHostLocks(t *testing.T) {
	a, b := hostPair(t, "locks")
	if err := writeSynced(a.path("l"), []byte("locked file\n")); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, "a's file on b", func() bool { _, err := os.Stat(b.path("l")); return err == nil })
	fa, err := os.OpenFile(a.path("l"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	fb, err := os.OpenFile(b.path("l"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}

	lk := func(f *os.File, cmd int, typ int16, start, length int64) (unix.Flock_t, error) {
		l := unix.Flock_t{Type: typ, Whence: 0, Start: start, Len: length}
		err := unix.FcntlFlock(f.Fd(), cmd, &l)
		return l, err
	}
	if _, err := lk(fa, unix.F_SETLK, unix.F_WRLCK, 0, 100); err != nil {
		t.Fatalf("a's write lock: %v", err)
	}
	if _, err := lk(fb, unix.F_SETLK, unix.F_WRLCK, 50, 10); !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) {
		t.Fatalf("b's conflicting F_SETLK: %v, want EAGAIN", err)
	}
	got, err := lk(fb, unix.F_GETLK, unix.F_WRLCK, 50, 10)
	if err != nil || got.Type != unix.F_WRLCK || got.Start != 0 || got.Len != 100 {
		t.Fatalf("b's F_GETLK = %+v, %v; want a's write lock 0+100", got, err)
	}
	if _, err := lk(fb, unix.F_SETLK, unix.F_WRLCK, 100, 50); err != nil {
		t.Fatalf("b's lock beside a's: %v", err)
	}

	// b waits for a's lock; a's unlock lets it through.
	done := make(chan error, 1)
	go func() { _, err := lk(fb, unix.F_SETLKW, unix.F_WRLCK, 0, 10); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("b's F_SETLKW returned while a holds the lock: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	start := time.Now()
	if _, err := lk(fa, unix.F_SETLK, unix.F_UNLCK, 0, 100); err != nil {
		t.Fatal(err)
	}
	t.Logf("b's waiting F_SETLKW got the lock %v after a's unlock", granted(t, done, start, 10*time.Second, "b's F_SETLKW after a's unlock"))
	// b's close releases its locks.
	if err := fb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := lk(fa, unix.F_SETLK, unix.F_WRLCK, 0, 200); err != nil {
		t.Fatalf("a's lock after b closed: %v", err)
	}
	if _, err := lk(fa, unix.F_SETLK, unix.F_UNLCK, 0, 0); err != nil {
		t.Fatal(err)
	}

	// flock: another process on the same host and one on the other host
	// are refused while a holds it; free after a's close.
	ga, err := os.Open(a.path("l"))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(ga.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("a's flock: %v", err)
	}
	tryFlock := func(path, mode string) bool {
		return exec.Command("flock", "-n", mode, path, "true").Run() == nil
	}
	if tryFlock(a.path("l"), "-s") {
		t.Error("another process on host a got a shared flock while a holds it exclusively")
	}
	if tryFlock(b.path("l"), "-s") {
		t.Error("host b got a shared flock while a holds it exclusively")
	}
	ga.Close()
	within(t, 5*time.Second, "b's flock after a's close", func() bool { return tryFlock(b.path("l"), "-x") })

	// a dies holding a lock: b gets it once a's session is seen dead.
	if _, err := lk(fa, unix.F_SETLK, unix.F_WRLCK, 0, 0); err != nil {
		t.Fatal(err)
	}
	fb, err = os.OpenFile(b.path("l"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	if _, err := lk(fb, unix.F_SETLK, unix.F_WRLCK, 0, 1); !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) {
		t.Fatalf("b's F_SETLK against a's whole-file lock: %v, want EAGAIN", err)
	}
	go func() { _, err := lk(fb, unix.F_SETLKW, unix.F_WRLCK, 0, 0); done <- err }()
	start = time.Now()
	killDaemonNow(t, a)
	t.Logf("b got the lock of killed host a %v after the kill", granted(t, done, start, 30*time.Second, "b's F_SETLKW after host a was killed"))
	fa.Close()
	fb.Close()
	b.umount(t)
	b.fsckStrict(t)
}

// granted waits up to limit for a waiting lock request's result on done
// and returns how long after start it came; an error or no result fails
// the test.
func granted(t *testing.T, done <-chan error, start time.Time, limit time.Duration, what string) time.Duration {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return time.Since(start)
	case <-time.After(limit):
		t.Fatalf("%s: no lock within %v", what, limit)
		return 0
	}
}
