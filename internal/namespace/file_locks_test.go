package namespace_test

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/filelock"
	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil/voltest"
	"github.com/doppelfs/doppel/internal/volume"
)

// fakeSessions plays several hosts' sessions on one volume: Own can be
// switched, so that one FS writes the records of two sessions.
type fakeSessions struct {
	mu    sync.Mutex
	own   uint64
	alive map[uint64]bool
}

func (s *fakeSessions) Own() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.own
}

func (s *fakeSessions) Alive(id uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.alive[id]
}

func (s *fakeSessions) set(own uint64, alive ...uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.own, s.alive = own, map[uint64]bool{}
	for _, a := range alive {
		s.alive[a] = true
	}
}

func openWithSessions(t *testing.T, s *fakeSessions) *volume.Volume {
	t.Helper()
	dir := t.TempDir()
	if err := voltest.VolumeInit(dir, volume.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	v, err := volume.OpenWith(dir, slog.New(slog.NewTextHandler(io.Discard, nil)), namespace.Options{Sessions: s})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// TestFileLocks: the volume's fcntl and flock locks (several hosts,
// docs/SHARED.md 9.4): owners conflict, an owner converts its own locks,
// flock and fcntl locks are apart, a waiting request gets the lock when
// the holder closes, a cancelled wait fails with EINTR, a lock of another
// session counts while it lives and is gone once it died.
func TestFileLocks(t *testing.T) {
	s := &fakeSessions{}
	s.set(1, 1, 2)
	v := openWithSessions(t, s)
	ns := v.NS
	if !ns.SharesLocks() {
		t.Fatal("a volume with sessions does not keep its locks")
	}
	ino := writeFile(t, ns, 1, "f", []byte("data"))
	w := func(start, end uint64) filelock.Lock {
		return filelock.Lock{Start: start, End: end, Type: filelock.Write, Pid: 42}
	}
	never := make(chan struct{})

	if err := ns.SetLk(never, ino, 10, false, w(0, 99), false); err != nil {
		t.Fatal(err)
	}
	wantErr(t, ns.SetLk(never, ino, 11, false, w(50, 60), false), syscall.EAGAIN)
	got, err := ns.GetLk(ino, 11, false, w(50, 60))
	if err != nil || got.Type != filelock.Write || got.Start != 0 || got.End != 99 || got.Pid != 42 {
		t.Fatalf("GetLk = %+v, %v; want owner 10's write lock 0-99, pid 42", got, err)
	}
	if err := ns.SetLk(never, ino, 11, false, w(100, 199), false); err != nil {
		t.Fatalf("a lock next to another owner's: %v", err)
	}
	// Owner 10 converts its own lock; a read lock then shares.
	if err := ns.SetLk(never, ino, 10, false, filelock.Lock{Start: 0, End: 99, Type: filelock.Read}, false); err != nil {
		t.Fatal(err)
	}
	if err := ns.SetLk(never, ino, 11, false, filelock.Lock{Start: 0, End: 9, Type: filelock.Read}, false); err != nil {
		t.Fatalf("two read locks: %v", err)
	}
	// flock locks are apart from fcntl locks.
	if err := ns.SetLk(never, ino, 12, true, w(0, filelock.MaxEnd), false); err != nil {
		t.Fatalf("flock beside fcntl locks: %v", err)
	}
	wantErr(t, ns.SetLk(never, ino, 13, true, w(0, filelock.MaxEnd), false), syscall.EAGAIN)

	// A waiter gets the lock when the holder's close releases it.
	done := make(chan error, 1)
	go func() { done <- ns.SetLk(never, ino, 13, true, w(0, filelock.MaxEnd), true) }()
	select {
	case err := <-done:
		t.Fatalf("a waiting flock returned while held: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := ns.ReleaseLocks(ino, 12, true); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting flock did not get the lock after the holder released it")
	}
	// A cancelled wait.
	cancel := make(chan struct{})
	go func() { done <- ns.SetLk(cancel, ino, 14, true, w(0, filelock.MaxEnd), true) }()
	time.Sleep(50 * time.Millisecond)
	close(cancel)
	if err := <-done; !errors.Is(err, syscall.EINTR) {
		t.Fatalf("cancelled wait: %v, want EINTR", err)
	}

	// Session 2 (another host) takes a lock; it counts while session 2
	// lives, and not once it died.
	s.set(2, 1, 2)
	if err := ns.SetLk(never, ino, 10, false, w(1000, 1999), false); err != nil {
		t.Fatal(err)
	}
	s.set(1, 1, 2)
	got, err = ns.GetLk(ino, 10, false, w(1500, 1500))
	if err != nil || got.Type != filelock.Write || got.Start != 1000 || got.Pid != 0 {
		t.Fatalf("GetLk of another session's lock = %+v, %v; want its write lock 1000-1999, pid 0", got, err)
	}
	wantErr(t, ns.SetLk(never, ino, 10, false, w(1500, 1500), false), syscall.EAGAIN)
	s.set(1, 1)
	if err := ns.SetLk(never, ino, 10, false, w(1500, 1500), false); err != nil {
		t.Fatalf("a dead session's lock still counts: %v", err)
	}
	s.set(1, 1, 2) // back alive: its record was deleted
	if got, _ := ns.GetLk(ino, 11, false, w(1000, 1000)); got.Type != filelock.Unlock {
		t.Fatalf("a dead session's lock was not deleted: %+v", got)
	}

	// Closes release everything; invalid requests are refused.
	for _, o := range []uint64{10, 11} {
		if err := ns.ReleaseLocks(ino, o, false); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := ns.GetLk(ino, 99, false, w(0, filelock.MaxEnd)); got.Type != filelock.Unlock {
		t.Fatalf("locks left after every owner closed: %+v", got)
	}
	wantErr(t, ns.SetLk(never, ino, 10, false, filelock.Lock{Start: 5, End: 1, Type: filelock.Read}, false), syscall.EINVAL)
}

// TestFileLocksOneHost: a volume of one host leaves locks to the kernel.
func TestFileLocksOneHost(t *testing.T) {
	v, _ := openVolume(t)
	if v.NS.SharesLocks() {
		t.Fatal("a volume of one host keeps locks")
	}
	wantErr(t, v.NS.SetLk(nil, 1, 1, false, filelock.Lock{End: 1, Type: filelock.Write}, false), syscall.ENOSYS)
}
