package namespace_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
)

// An archive extractor's pattern: write, then set times, owner and mode on
// the open file, then close. The changes show at once, survive the close,
// and later writes still move mtime.
func TestAttrsSetOnBufferedFileShowAndPersist(t *testing.T) {
	v, dir := openVolume(t)
	fs := v.NS
	a, h, err := fs.Create(root, vfs.RootIno, "f", 0o600, syscall.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Must(fs.Write(h, 0, []byte("some data")))
	old := time.Unix(1_600_000_000, 123)
	testutil.Must(fs.SetAttr(root, a.Ino, vfs.SetAttr{SetMtime: true, Mtime: old, SetAtime: true, Atime: old}))
	testutil.Must(fs.SetAttr(root, a.Ino, vfs.SetAttr{SetUid: true, Uid: 1234, SetGid: true, Gid: 5678}))
	got := testutil.Must(fs.SetAttr(root, a.Ino, vfs.SetAttr{SetMode: true, Mode: 0o4755}))
	check := func(what string, got vfs.Attr, wantMtime time.Time) {
		t.Helper()
		if got.Mode&0o7777 != 0o4755 || got.Uid != 1234 || got.Gid != 5678 || got.Size != 9 {
			t.Fatalf("%s: mode %o uid %d gid %d size %d, want 4755 1234 5678 9", what, got.Mode&0o7777, got.Uid, got.Gid, got.Size)
		}
		if !got.Mtime.Equal(wantMtime) || !got.Atime.Equal(old) {
			t.Fatalf("%s: mtime %v atime %v, want %v and %v", what, got.Mtime, got.Atime, wantMtime, old)
		}
		if !got.Ctime.After(old) {
			t.Fatalf("%s: ctime %v went back with mtime", what, got.Ctime)
		}
	}
	check("setattr reply", got, old)
	check("getattr while open", testutil.Must(fs.GetAttr(a.Ino)), old)
	if err := fs.Release(h); err != nil {
		t.Fatal(err)
	}
	v = reopen(t, v, dir)
	check("after close and remount", testutil.Must(v.NS.GetAttr(a.Ino)), old)

	// A write after a held mtime moves it again; a truncate commits what is
	// held together with itself.
	h = testutil.Must(v.NS.Open(a.Ino, syscall.O_RDWR))
	testutil.Must(v.NS.Write(h, 0, []byte("x")))
	testutil.Must(v.NS.SetAttr(root, a.Ino, vfs.SetAttr{SetMtime: true, Mtime: old}))
	testutil.Must(v.NS.Write(h, 1, []byte("y")))
	if m := testutil.Must(v.NS.GetAttr(a.Ino)).Mtime; !m.After(old) {
		t.Fatalf("mtime %v after a write that followed utimensat, want now", m)
	}
	testutil.Must(v.NS.SetAttr(root, a.Ino, vfs.SetAttr{SetMode: true, Mode: 0o640}))
	testutil.Must(v.NS.SetAttr(root, a.Ino, vfs.SetAttr{SetSize: true, Size: 5}))
	if err := v.NS.Release(h); err != nil {
		t.Fatal(err)
	}
	v = reopen(t, v, dir)
	at := testutil.Must(v.NS.GetAttr(a.Ino))
	if at.Mode&0o7777 != 0o640 || at.Size != 5 || at.Uid != 1234 {
		t.Fatalf("after truncate: mode %o size %d uid %d, want 640 5 1234", at.Mode&0o7777, at.Size, at.Uid)
	}
	if data := readFile(t, v.NS, a.Ino); string(data) != "xyme " {
		t.Fatalf("content %q, want %q", data, "xyme ")
	}
}

// A held chmod never shows undone: GetAttr racing the flush that commits
// it sees the new mode either held or committed. (It once loaded the
// record before the flush and overlaid the open file after it, and saw
// neither.) Each round writes, holds mode k and flushes; a reader checks
// the modes it sees never go back.
func TestHeldModeNeverShowsUndoneDuringFlush(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	a, h, err := fs.Create(root, vfs.RootIno, "f", 0, syscall.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Release(h)
	const rounds = 0o777
	done := make(chan struct{})
	bad := make(chan string, 1)
	go func() {
		defer close(bad)
		last := uint32(0)
		for {
			select {
			case <-done:
				return
			default:
			}
			m := testutil.Must(fs.GetAttr(a.Ino)).Mode & 0o777
			if m < last {
				bad <- fmt.Sprintf("mode went back from %04o to %04o", last, m)
				return
			}
			last = m
		}
	}()
	for k := uint32(1); k <= rounds; k++ {
		testutil.Must(fs.Write(h, int64(k), []byte{byte(k)}))
		testutil.Must(fs.SetAttr(root, a.Ino, vfs.SetAttr{SetMode: true, Mode: k}))
		if err := fs.Flush(h); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if msg, ok := <-bad; ok {
		t.Fatal(msg)
	}
}
