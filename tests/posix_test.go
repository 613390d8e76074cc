package tests

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestPOSIX checks semantics the model test does not reach: special
// files, ownership, times, name limits, huge sparse files, privileged
// xattrs and sync calls. The subtests share one volume.
func TestPOSIX(t *testing.T) {
	v := newVolume(t)
	dir := func(t *testing.T) string {
		d := v.path(filepath.Base(t.Name()))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	t.Run("ExclusiveCreate", func(t *testing.T) { testExclusiveCreate(t, dir(t)) })
	t.Run("Truncating", func(t *testing.T) { testOpenTrunc(t, dir(t)) })
	t.Run("NameMax", func(t *testing.T) { testNameMax(t, dir(t)) })
	t.Run("TiBSparse", func(t *testing.T) { testTiBSparse(t, v, dir(t)) })
	t.Run("Fifo", func(t *testing.T) { testFifo(t, dir(t)) })
	t.Run("CharDevice", func(t *testing.T) { testCharDevice(t, dir(t)) })
	t.Run("Utimens", func(t *testing.T) { testUtimens(t, dir(t)) })
	t.Run("Chown", func(t *testing.T) { testChown(t, dir(t)) })
	t.Run("TimestampUpdates", func(t *testing.T) { testTimestampUpdates(t, dir(t)) })
	t.Run("HardLinks", func(t *testing.T) { testHardLinks(t, dir(t)) })
	t.Run("OpenUnlinked", func(t *testing.T) { testOpenUnlinked(t, dir(t)) })
	t.Run("TrustedXattr", func(t *testing.T) { testTrustedXattr(t, dir(t)) })
	t.Run("LargeXattr", func(t *testing.T) { testLargeXattr(t, dir(t)) })
	t.Run("ACLsRefused", func(t *testing.T) { testACLsRefused(t, dir(t)) })
	t.Run("LongSymlink", func(t *testing.T) { testLongSymlink(t, dir(t)) })
	t.Run("ManyEntries", func(t *testing.T) { testManyEntries(t, dir(t)) })
	t.Run("ReaddirWhileUnlinking", func(t *testing.T) { testReaddirWhileUnlinking(t, dir(t)) })
	t.Run("MmapShared", func(t *testing.T) { testMmapShared(t, dir(t)) })
	t.Run("Statfs", func(t *testing.T) { testStatfs(t, v.Mnt) })
	t.Run("Sync", func(t *testing.T) { testSync(t, dir(t)) })
	t.Run("FallocateShift", func(t *testing.T) { testFallocateShift(t, dir(t)) })
}

// wantErrno fails unless err carries the errno want.
func wantErrno(t *testing.T, what string, err error, want unix.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got %v, want %s", what, err, errName(want))
	}
}

func lstat(t *testing.T, path string) *unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	testutil.Check(t, unix.Lstat(path, &st))
	return &st
}

func testExclusiveCreate(t *testing.T, d string) {
	p := filepath.Join(d, "f")
	fd, err := unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
	testutil.Check(t, err)
	unix.Close(fd)
	_, err = unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
	wantErrno(t, "O_EXCL on an existing file", err, unix.EEXIST)
	// O_EXCL does not follow symlinks, even dangling ones.
	testutil.Check(t, os.Symlink("nowhere", filepath.Join(d, "dangling")))
	_, err = unix.Open(filepath.Join(d, "dangling"), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
	wantErrno(t, "O_EXCL on a dangling symlink", err, unix.EEXIST)
	if _, err := os.Lstat(filepath.Join(d, "nowhere")); !os.IsNotExist(err) {
		t.Errorf("O_EXCL through a dangling symlink created its target: %v", err)
	}
}

func testOpenTrunc(t *testing.T, d string) {
	p := filepath.Join(d, "f")
	testutil.Check(t, os.WriteFile(p, testutil.SeededBytes(10, 300<<10), 0o644))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	testutil.Check(t, err)
	if fi, err := f.Stat(); err != nil || fi.Size() != 0 {
		t.Errorf("after O_TRUNC: fstat size %v, err %v; want 0", fi.Size(), err)
	}
	_, err = f.Write([]byte("new"))
	testutil.Check(t, err)
	testutil.Check(t, f.Close())
	checkFile(t, p, []byte("new"))
}

func testNameMax(t *testing.T, d string) {
	name255, name256 := strings.Repeat("n", 255), strings.Repeat("m", 256)
	p := filepath.Join(d, name255)
	testutil.Check(t, os.WriteFile(p, []byte("max"), 0o644))
	checkFile(t, p, []byte("max"))
	ents, err := os.ReadDir(d)
	testutil.Check(t, err)
	if len(ents) != 1 || ents[0].Name() != name255 {
		t.Errorf("readdir after creating a 255-byte name: %v", ents)
	}
	other := filepath.Join(d, strings.Repeat("o", 255))
	testutil.Check(t, os.Rename(p, other))
	testutil.Check(t, os.Remove(other))

	long := filepath.Join(d, name256)
	_, err = unix.Open(long, unix.O_CREAT|unix.O_WRONLY, 0o644)
	wantErrno(t, "create with a 256-byte name", err, unix.ENAMETOOLONG)
	wantErrno(t, "mkdir with a 256-byte name", unix.Mkdir(long, 0o755), unix.ENAMETOOLONG)
	wantErrno(t, "symlink with a 256-byte name", unix.Symlink("x", long), unix.ENAMETOOLONG)
	var st unix.Stat_t
	wantErrno(t, "lstat of a 256-byte name", unix.Lstat(long, &st), unix.ENAMETOOLONG)
	testutil.Check(t, os.WriteFile(p, nil, 0o644))
	wantErrno(t, "rename to a 256-byte name", unix.Rename(p, long), unix.ENAMETOOLONG)
}

func testTiBSparse(t *testing.T, v *volume, d string) {
	const size = 1 << 40
	p := filepath.Join(d, "huge")
	before := v.df(t)
	f, err := os.Create(p)
	testutil.Check(t, err)
	defer f.Close()
	testutil.Check(t, f.Truncate(size))
	tail := testutil.SeededBytes(11, 4096)
	_, err = f.WriteAt(tail, size-4096)
	testutil.Check(t, err)
	testutil.Check(t, f.Sync())
	st := lstat(t, p)
	if st.Size != size {
		t.Errorf("size %d, want 1 TiB", st.Size)
	}
	if st.Blocks*512 > 16*MiB {
		t.Errorf("a 1 TiB file with 4 KiB of data occupies %d blocks", st.Blocks)
	}
	got := make([]byte, 4096)
	_, err = f.ReadAt(got, size-4096)
	testutil.Check(t, err)
	if !bytes.Equal(got, tail) {
		t.Errorf("data written at the end of a 1 TiB file reads back differently")
	}
	_, err = f.ReadAt(got, size/2+12345)
	testutil.Check(t, err)
	if !bytes.Equal(got, make([]byte, 4096)) {
		t.Errorf("the middle of a sparse 1 TiB file is not zeros")
	}
	if g := v.df(t).PhysicalBytes - before.PhysicalBytes; g > MiB {
		t.Errorf("a sparse 1 TiB file with 4 KiB of data grew physical_bytes by %d", g)
	}
	testutil.Check(t, f.Close())
	testutil.Check(t, os.Remove(p))
}

func testFifo(t *testing.T, d string) {
	p := filepath.Join(d, "fifo")
	testutil.Check(t, unix.Mkfifo(p, 0o640))
	st := lstat(t, p)
	if st.Mode&unix.S_IFMT != unix.S_IFIFO || st.Mode&0o777 != 0o640 {
		t.Errorf("mkfifo made mode %o, want fifo 0640", st.Mode)
	}
	// O_RDWR does not block on Linux; data passes through the kernel pipe.
	fd, err := unix.Open(p, unix.O_RDWR, 0)
	testutil.Check(t, err)
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte("ping"))
	testutil.Check(t, err)
	buf := make([]byte, 4)
	n, err := unix.Read(fd, buf)
	if err != nil || string(buf[:n]) != "ping" {
		t.Errorf("read from fifo: %q, %v", buf[:n], err)
	}
}

func testCharDevice(t *testing.T, d string) {
	p := filepath.Join(d, "null")
	dev := unix.Mkdev(1, 3)
	testutil.Check(t, unix.Mknod(p, unix.S_IFCHR|0o600, int(dev)))
	st := lstat(t, p)
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != dev {
		t.Errorf("mknod made mode %o rdev %d:%d, want char device 1:3", st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}
}

func testUtimens(t *testing.T, d string) {
	f := filepath.Join(d, "f")
	l := filepath.Join(d, "l")
	testutil.Check(t, os.WriteFile(f, []byte("x"), 0o644))
	testutil.Check(t, os.Symlink("f", l))
	atime := unix.Timespec{Sec: 1234567890, Nsec: 123456789}
	mtime := unix.Timespec{Sec: 1500000000, Nsec: 987654321}
	for _, p := range []string{f, d} {
		testutil.Check(t, unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{atime, mtime}, 0))
		st := lstat(t, p)
		if st.Atim != atime || st.Mtim != mtime {
			t.Errorf("%s: utimensat set atime %v mtime %v, stat shows %v %v", p, atime, mtime, st.Atim, st.Mtim)
		}
	}
	// UTIME_OMIT leaves atime alone; AT_SYMLINK_NOFOLLOW changes the link only.
	mtime2 := unix.Timespec{Sec: 1600000000, Nsec: 1}
	testutil.Check(t, unix.UtimesNanoAt(unix.AT_FDCWD, l, []unix.Timespec{{Nsec: unix.UTIME_OMIT}, mtime2}, unix.AT_SYMLINK_NOFOLLOW))
	if st := lstat(t, l); st.Mtim != mtime2 {
		t.Errorf("symlink mtime %v, want %v", st.Mtim, mtime2)
	}
	if st := lstat(t, f); st.Mtim != mtime || st.Atim != atime {
		t.Errorf("setting the symlink's times changed its target's: %v %v", st.Atim, st.Mtim)
	}
}

// testTimestampUpdates checks that operations update mtime and ctime as
// POSIX requires (make, rsync and backup tools depend on it). Each case
// first sets mtime into the past, then expects it moved (or not) and
// ctime advanced.
func testTimestampUpdates(t *testing.T, d string) {
	f, sub := filepath.Join(d, "f"), filepath.Join(d, "sub")
	testutil.Check(t, os.WriteFile(f, testutil.SeededBytes(16, 100<<10), 0o644))
	testutil.Check(t, os.Mkdir(sub, 0o755))
	past := unix.Timespec{Sec: 1000000000}
	later := func(a, b unix.Timespec) bool { return a.Sec > b.Sec || a.Sec == b.Sec && a.Nsec > b.Nsec }
	cases := []struct {
		name       string
		path       string // whose times are checked
		mtimeMoves bool
		op         func() error
	}{
		{"write", f, true, func() error { return appendTo(f, []byte("more")) }},
		{"truncate", f, true, func() error { return os.Truncate(f, 1000) }},
		{"punch hole", f, true, func() error {
			return withFd(f, func(fd int) error {
				return unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 4096)
			})
		}},
		{"chmod", f, false, func() error { return os.Chmod(f, 0o600) }},
		{"link (file ctime)", f, false, func() error { return os.Link(f, filepath.Join(d, "f2")) }},
		{"create in dir", sub, true, func() error { return os.WriteFile(filepath.Join(sub, "x"), nil, 0o644) }},
		{"rename out of dir", sub, true, func() error { return os.Rename(filepath.Join(sub, "x"), filepath.Join(d, "x")) }},
		{"rename into dir", sub, true, func() error { return os.Rename(filepath.Join(d, "x"), filepath.Join(sub, "y")) }},
		{"unlink in dir", sub, true, func() error { return os.Remove(filepath.Join(sub, "y")) }},
		{"mkdir in dir", sub, true, func() error { return os.Mkdir(filepath.Join(sub, "z"), 0o755) }},
	}
	for _, c := range cases {
		testutil.Check(t, unix.UtimesNanoAt(unix.AT_FDCWD, c.path, []unix.Timespec{past, past}, 0))
		before := lstat(t, c.path)
		time.Sleep(20 * time.Millisecond) // let coarse clocks tick
		if err := c.op(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		after := lstat(t, c.path)
		if moved := later(after.Mtim, past); moved != c.mtimeMoves {
			t.Errorf("%s: mtime %v -> %v; want it moved: %v", c.name, past, after.Mtim, c.mtimeMoves)
		}
		if !later(after.Ctim, before.Ctim) {
			t.Errorf("%s: ctime did not advance (%v -> %v)", c.name, before.Ctim, after.Ctim)
		}
	}
}

func appendTo(p string, data []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

func withFd(p string, fn func(fd int) error) error {
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return fn(fd)
}

func testChown(t *testing.T, d string) {
	f := filepath.Join(d, "f")
	testutil.Check(t, os.WriteFile(f, []byte("x"), 0o644))
	if st := lstat(t, f); int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid() {
		t.Errorf("new file owned by %d:%d, want the creator %d:%d", st.Uid, st.Gid, os.Geteuid(), os.Getegid())
	}
	testutil.Check(t, os.Chown(f, 1234, 5678))
	if st := lstat(t, f); st.Uid != 1234 || st.Gid != 5678 {
		t.Errorf("after chown 1234:5678 owner is %d:%d", st.Uid, st.Gid)
	}
	l := filepath.Join(d, "l")
	testutil.Check(t, os.Symlink("f", l))
	testutil.Check(t, os.Lchown(l, 42, 43))
	if st := lstat(t, l); st.Uid != 42 || st.Gid != 43 {
		t.Errorf("after lchown 42:43 the symlink is owned by %d:%d", st.Uid, st.Gid)
	}
	if st := lstat(t, f); st.Uid != 1234 {
		t.Errorf("lchown of a symlink changed its target's owner to %d", st.Uid)
	}
	// Linux clears set-user-ID on chown of a regular file, even by root.
	testutil.Check(t, os.Chmod(f, 0o4755))
	testutil.Check(t, os.Chown(f, 0, 0))
	if st := lstat(t, f); st.Mode&0o7777 != 0o755 {
		t.Errorf("after chown of a setuid file mode is %04o, want 0755", st.Mode&0o7777)
	}
}

func testHardLinks(t *testing.T, d string) {
	a, b, c := filepath.Join(d, "a"), filepath.Join(d, "b"), filepath.Join(d, "sub", "c")
	testutil.Check(t, os.Mkdir(filepath.Join(d, "sub"), 0o755))
	testutil.Check(t, os.WriteFile(a, []byte("shared"), 0o644))
	nlink := func(want uint64, paths ...string) {
		t.Helper()
		ino := lstat(t, paths[0]).Ino
		for _, p := range paths {
			if st := lstat(t, p); uint64(st.Nlink) != want || st.Ino != ino {
				t.Errorf("%s: nlink %d ino %d, want nlink %d ino %d", p, st.Nlink, st.Ino, want, ino)
			}
		}
	}
	nlink(1, a)
	testutil.Check(t, os.Link(a, b))
	testutil.Check(t, os.Link(b, c))
	nlink(3, a, b, c)
	testutil.Check(t, os.WriteFile(c, []byte("changed via c"), 0o644))
	checkFile(t, a, []byte("changed via c"))
	testutil.Check(t, os.Remove(a))
	nlink(2, b, c)
	testutil.Check(t, os.Rename(b, filepath.Join(d, "sub", "b2")))
	nlink(2, c, filepath.Join(d, "sub", "b2"))
	wantErrno(t, "link to a directory", unix.Link(filepath.Join(d, "sub"), filepath.Join(d, "dirlink")), unix.EPERM)
}

func testOpenUnlinked(t *testing.T, d string) {
	p := filepath.Join(d, "f")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	testutil.Check(t, err)
	defer f.Close()
	first := testutil.SeededBytes(12, 200<<10)
	_, err = f.Write(first)
	testutil.Check(t, err)
	testutil.Check(t, os.Remove(p))
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Errorf("lstat after unlink: %v", err)
	}
	if ents, _ := os.ReadDir(d); len(ents) != 0 {
		t.Errorf("unlinked file still listed: %v", ents)
	}
	var st unix.Stat_t
	testutil.Check(t, unix.Fstat(int(f.Fd()), &st))
	if st.Nlink != 0 || st.Size != int64(len(first)) {
		t.Errorf("fstat of an unlinked open file: nlink %d size %d, want 0 and %d", st.Nlink, st.Size, len(first))
	}
	more := testutil.SeededBytes(13, 100<<10)
	_, err = f.WriteAt(more, 1<<20)
	testutil.Check(t, err)
	testutil.Check(t, f.Sync())
	want := concat(first, make([]byte, 1<<20-len(first)), more)
	got := make([]byte, len(want)+10)
	n, _ := f.ReadAt(got, 0)
	if d := diffBytes(want, got[:n]); d != "" {
		t.Errorf("unlinked open file reads back differently: %s", d)
	}
	testutil.Check(t, f.Truncate(1000))
	n, _ = f.ReadAt(got, 0)
	if n != 1000 || !bytes.Equal(got[:n], first[:1000]) {
		t.Errorf("after ftruncate the unlinked file reads %d bytes", n)
	}
	testutil.Check(t, f.Close())
}

func testTrustedXattr(t *testing.T, d string) {
	p := filepath.Join(d, "f")
	testutil.Check(t, os.WriteFile(p, nil, 0o644))
	testutil.Check(t, unix.Setxattr(p, "trusted.doppel", []byte("secret"), 0))
	buf := make([]byte, 64)
	n, err := unix.Getxattr(p, "trusted.doppel", buf)
	if err != nil || string(buf[:n]) != "secret" {
		t.Errorf("getxattr trusted.doppel: %q, %v", buf[:n], err)
	}
	names, err := xattrNames(func(b []byte) (int, error) { return unix.Listxattr(p, b) })
	testutil.Check(t, err)
	if !slices.Contains(names, "trusted.doppel") {
		t.Errorf("listxattr as root lacks trusted.doppel: %q", names)
	}
	testutil.Check(t, unix.Removexattr(p, "trusted.doppel"))
	_, err = unix.Getxattr(p, "trusted.doppel", buf)
	wantErrno(t, "getxattr after removexattr", err, unix.ENODATA)
}

func testLargeXattr(t *testing.T, d string) {
	p := filepath.Join(d, "f")
	testutil.Check(t, os.WriteFile(p, nil, 0o644))
	val := testutil.SeededBytes(15, 60<<10) // near XATTR_SIZE_MAX (64 KiB)
	testutil.Check(t, unix.Setxattr(p, "user.big", val, 0))
	buf := make([]byte, 64<<10)
	n, err := unix.Getxattr(p, "user.big", buf)
	testutil.Check(t, err)
	if !bytes.Equal(buf[:n], val) {
		t.Errorf("a 60 KiB xattr value reads back as %d different bytes", n)
	}
}

// testACLsRefused: doppel does not implement POSIX ACLs, so it refuses
// them as a file system mounted noacl does, and cp -a, which sets modes
// by writing an ACL when it can, falls back to chmod and keeps them.
func testACLsRefused(t *testing.T, d string) {
	p := filepath.Join(d, "f")
	testutil.Check(t, os.WriteFile(p, nil, 0o644))
	acl := []byte{2, 0, 0, 0, 1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff, 4, 0, 4, 0, 0xff, 0xff, 0xff, 0xff, 0x20, 0, 4, 0, 0xff, 0xff, 0xff, 0xff}
	wantErrno(t, "setxattr system.posix_acl_access", unix.Setxattr(p, "system.posix_acl_access", acl, 0), unix.EOPNOTSUPP)
	testutil.Check(t, os.Mkdir(filepath.Join(d, "sub"), 0o751))
	testutil.Check(t, os.Chmod(p, 0o640))
	if out, err := exec.Command("cp", "-a", d, d+"-copy").CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v\n%s", err, out)
	}
	for _, c := range []struct {
		name string
		mode uint32
	}{{"f", 0o640}, {"sub", 0o751}, {"", 0o755}} {
		if st := lstat(t, filepath.Join(d+"-copy", c.name)); st.Mode&0o7777 != c.mode {
			t.Errorf("cp -a made %q mode %o, want %o", c.name, st.Mode&0o7777, c.mode)
		}
	}
}

func testLongSymlink(t *testing.T, d string) {
	target := strings.Repeat("t/", 2047) + "x" // 4095 bytes: PATH_MAX-1
	p := filepath.Join(d, "l")
	testutil.Check(t, unix.Symlink(target, p))
	got, err := readlink(p)
	testutil.Check(t, err)
	if got != target {
		t.Errorf("readlink of a 4095-byte target returned %d bytes", len(got))
	}
	if st := lstat(t, p); st.Size != int64(len(target)) {
		t.Errorf("symlink size %d, want %d", st.Size, len(target))
	}
	wantErrno(t, "symlink with a 4096-byte target", unix.Symlink(target+"y", filepath.Join(d, "l2")), unix.ENAMETOOLONG)
}

// testManyEntries lists a directory far larger than one readdir buffer.
func testManyEntries(t *testing.T, d string) {
	const n = 3000
	want := map[string]bool{}
	for i := range n {
		name := fmt.Sprintf("entry-%05d-%s", i, strings.Repeat("x", i%100))
		want[name] = true
		testutil.Check(t, os.WriteFile(filepath.Join(d, name), nil, 0o644))
	}
	check := func(when string) {
		t.Helper()
		ents, err := os.ReadDir(d)
		testutil.Check(t, err)
		got := map[string]bool{}
		for _, e := range ents {
			if got[e.Name()] {
				t.Errorf("%s: %s listed twice", when, e.Name())
			}
			got[e.Name()] = true
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: listed %d entries, want %d", when, len(got), len(want))
		}
	}
	check("after creating")
	for name := range want {
		if name[len("entry-0000")]%2 == 0 {
			testutil.Check(t, os.Remove(filepath.Join(d, name)))
			delete(want, name)
		}
	}
	check("after removing half")
}

// testReaddirWhileUnlinking removes each entry as soon as readdir returns
// it: entries not yet returned were never removed, so none may be skipped.
func testReaddirWhileUnlinking(t *testing.T, d string) {
	for i := range 1000 {
		testutil.Check(t, os.WriteFile(filepath.Join(d, fmt.Sprintf("f%04d", i)), nil, 0o644))
	}
	f, err := os.Open(d)
	testutil.Check(t, err)
	defer f.Close()
	for {
		ents, err := f.ReadDir(37)
		for _, e := range ents {
			testutil.Check(t, os.Remove(filepath.Join(d, e.Name())))
		}
		if err != nil {
			break
		}
	}
	if left, _ := os.ReadDir(d); len(left) != 0 {
		t.Errorf("readdir skipped %d entries while earlier ones were being unlinked, e.g. %s", len(left), left[0].Name())
	}
}

// testMmapShared writes through a shared mapping and reads with read(2),
// and the other way round, across a file with a hole.
func testMmapShared(t *testing.T, d string) {
	p := filepath.Join(d, "f")
	const size = 3 * MiB
	initial := testutil.SeededBytes(17, MiB)
	testutil.Check(t, os.WriteFile(p, initial, 0o644))
	testutil.Check(t, os.Truncate(p, size))
	fd, err := unix.Open(p, unix.O_RDWR, 0)
	testutil.Check(t, err)
	defer unix.Close(fd)
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	testutil.Check(t, err)
	if !bytes.Equal(mem[:MiB], initial) || !bytes.Equal(mem[MiB:MiB+4096], make([]byte, 4096)) {
		t.Errorf("mapping does not show the file's content")
	}
	patch := testutil.SeededBytes(18, 100<<10)
	copy(mem[2*MiB+77:], patch) // into the hole
	testutil.Check(t, unix.Msync(mem, unix.MS_SYNC))
	testutil.Check(t, unix.Munmap(mem))
	want := concat(initial, make([]byte, MiB+77), patch)
	want = append(want, make([]byte, size-len(want))...)
	checkFile(t, p, want)
}

func testStatfs(t *testing.T, mnt string) {
	var st unix.Statfs_t
	testutil.Check(t, unix.Statfs(mnt, &st))
	if st.Bsize <= 0 || st.Blocks == 0 || st.Bfree > st.Blocks || st.Bavail > st.Blocks || st.Namelen == 0 {
		t.Errorf("statfs: bsize %d blocks %d bfree %d bavail %d namelen %d", st.Bsize, st.Blocks, st.Bfree, st.Bavail, st.Namelen)
	}
}

func testSync(t *testing.T, d string) {
	p := filepath.Join(d, "f")
	f, err := os.Create(p)
	testutil.Check(t, err)
	defer f.Close()
	_, err = f.Write(testutil.SeededBytes(14, 1<<20))
	testutil.Check(t, err)
	fd := int(f.Fd())
	testutil.Check(t, unix.Fsync(fd))
	testutil.Check(t, unix.Fdatasync(fd))
	testutil.Check(t, unix.Syncfs(fd))
	dirf, err := os.Open(d)
	testutil.Check(t, err)
	defer dirf.Close()
	if err := dirf.Sync(); err != nil {
		t.Errorf("fsync of a directory: %v", err)
	}
}
