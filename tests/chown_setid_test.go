package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestChownDropsSetIDBits checks pjdfstest's chown rule on every file
// type, call path and caller: a chown of anything but a directory drops
// set-user-ID, and set-group-ID when group execute is on, also when it
// changes no owner (chown(path, -1, -1)); directories keep both. These
// are ext4's results on Linux 6.18 (tmpfs and XFS agree), checked case by
// case; before the fix doppel kept the bits on fifos, sockets and device
// nodes, and on regular files for chown(path, -1, -1).
func TestChownDropsSetIDBits(t *testing.T) {
	requireDoppel(t)
	if os.Geteuid() != 0 {
		t.Skip("skipping: making device nodes and files of other owners needs root")
	}
	t.Run("native", func(t *testing.T) { // a control: the rule is the kernel's
		d := t.TempDir()
		testutil.Check(t, os.Chmod(d, 0o777))
		checkChownSetID(t, func(name string) string { return filepath.Join(d, name) })
	})
	t.Run("doppel", func(t *testing.T) {
		v := newVolume(t)
		testutil.Check(t, os.Chmod(v.path(), 0o777))
		checkChownSetID(t, func(name string) string { return v.path(name) })
	})
}

func checkChownSetID(t *testing.T, path func(name string) string) {
	nobody := &user{uid: 65534, groups: []uint32{65533, 65532}}
	callers := []struct {
		name     string
		as       *user
		uid, gid int
		wantUid  uint32
		wantGid  uint32
	}{
		{"root", nil, 0, 0, 0, 0},
		{"user", nobody, -1, 65532, 65534, 65532},
		{"user-no-ids", nobody, -1, -1, 65534, 65533},
		{"root-no-ids", nil, -1, -1, 65534, 65533},
	}
	types := []struct {
		name string
		mode uint32
	}{
		{"fifo", syscall.S_IFIFO}, {"sock", syscall.S_IFSOCK},
		{"blk", syscall.S_IFBLK}, {"chr", syscall.S_IFCHR},
		{"reg", syscall.S_IFREG}, {"dir", syscall.S_IFDIR},
	}
	for _, typ := range types {
		for _, perm := range []uint32{0o6555, 0o4555, 0o2545, 0o2555} {
			want := perm
			if typ.mode != syscall.S_IFDIR {
				want &^= syscall.S_ISUID
				if perm&syscall.S_IXGRP != 0 {
					want &^= syscall.S_ISGID
				}
			}
			for _, via := range []string{"direct", "symlink", "lchown"} {
				for _, c := range callers {
					name := fmt.Sprintf("%s-%04o-%s-%s", typ.name, perm, via, c.name)
					p := path(name)
					makeNode(t, p, typ.mode)
					testutil.Check(t, os.Lchown(p, 65534, 65533))
					testutil.Check(t, syscall.Chmod(p, perm))
					if got := lstat(t, p).Mode & 0o7777; got != perm {
						t.Fatalf("%s: mode %04o after chmod, want %04o", name, got, perm)
					}
					target, op := p, "chown"
					switch via {
					case "symlink": // chown follows it
						target = p + ".link"
						testutil.Check(t, os.Symlink(name, target))
					case "lchown":
						op = "lchown"
					}
					if err := runAsUser(t, c.as, op, target, c.uid, c.gid); err != nil {
						t.Errorf("%s: %s: %v", name, op, err)
						continue
					}
					st := lstat(t, p)
					if got := st.Mode & 0o7777; got != want {
						t.Errorf("%s: mode %04o after %s, want %04o", name, got, op, want)
					}
					if st.Uid != c.wantUid || st.Gid != c.wantGid {
						t.Errorf("%s: owner %d:%d after %s, want %d:%d", name, st.Uid, st.Gid, op, c.wantUid, c.wantGid)
					}
				}
			}
		}
	}
	// A chown that fails changes nothing: not a group the caller is in.
	p := path("denied")
	makeNode(t, p, syscall.S_IFIFO)
	testutil.Check(t, os.Lchown(p, 65534, 65533))
	testutil.Check(t, syscall.Chmod(p, 0o6555))
	if err := runAsUser(t, nobody, "chown", p, -1, 1234); err != syscall.EPERM {
		t.Errorf("chown to a group the caller is not in: %v, want EPERM", err)
	}
	if got := lstat(t, p).Mode & 0o7777; got != 0o6555 {
		t.Errorf("a refused chown changed the mode to %04o", got)
	}
}

// makeNode makes a node of the given type (S_IFMT bits) with mode 0644.
func makeNode(t *testing.T, p string, typ uint32) {
	t.Helper()
	switch typ {
	case syscall.S_IFDIR:
		testutil.Check(t, os.Mkdir(p, 0o755))
	case syscall.S_IFREG:
		testutil.Check(t, os.WriteFile(p, nil, 0o644))
	default:
		testutil.Check(t, syscall.Mknod(p, typ|0o644, int(unix.Mkdev(1, 3))))
	}
	if _, err := os.Lstat(filepath.Clean(p)); err != nil {
		t.Fatal(err)
	}
}
