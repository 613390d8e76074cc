package tests

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestKillPriv checks that writes, truncates and chowns drop a file's
// privileges as on any Linux file system. doppel mounts with
// FUSE_HANDLE_KILLPRIV_V2, so the daemon, not the kernel, does it: file
// capabilities always go, set-user-ID goes when the writer lacks
// CAP_FSETID, and set-group-ID too when group execute is on.
func TestKillPriv(t *testing.T) {
	requireDoppel(t)
	if os.Geteuid() != 0 {
		t.Skip("skipping: setting file capabilities and dropping CAP_FSETID need root")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("skipping: setpriv is needed to write without CAP_FSETID")
	}
	v := newVolume(t)
	write := func(path string, privileged bool, args ...string) {
		t.Helper()
		cmd := []string{"dd", "of=" + path, "bs=1", "count=1", "seek=3", "conv=notrunc", "status=none"}
		if len(args) > 0 {
			cmd = args
		}
		if !privileged {
			cmd = append([]string{"setpriv", "--inh-caps=-fsetid", "--bounding-set=-fsetid", "--"}, cmd...)
		}
		c := exec.Command(cmd[0], cmd[1:]...)
		c.Stdin = strings.NewReader("z")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v %s", cmd, err, out)
		}
	}
	mode := func(path string) uint32 { return lstat(t, path).Mode & 0o7777 }
	file := func(name string, perm uint32) string {
		p := v.path(name)
		testutil.Check(t, os.WriteFile(p, []byte("content"), 0o644))
		testutil.Check(t, os.Chmod(p, os.FileMode(perm&0o777)|unixModeBits(perm)))
		if got := mode(p); got != perm {
			t.Fatalf("%s: mode %04o after chmod, want %04o", name, got, perm)
		}
		return p
	}

	for _, tc := range []struct {
		name       string
		perm, want uint32
		privileged bool
	}{
		{"suid-sgid-gx", 0o6775, 0o0775, false},
		{"sgid-no-gx", 0o2745, 0o2745, false}, // not group-executable: mandatory locking, kept
		{"suid-by-root", 0o4755, 0o4755, true},
	} {
		p := file(tc.name, tc.perm)
		write(p, tc.privileged)
		if got := mode(p); got != tc.want {
			t.Errorf("%s: mode %04o after a write, want %04o", tc.name, got, tc.want)
		}
	}
	p := file("truncated", 0o4755)
	write(p, false, "truncate", "-s", "2", p)
	if got := mode(p); got != 0o755 {
		t.Errorf("truncated: mode %04o after a truncate without CAP_FSETID, want 0755", got)
	}

	// File capabilities go on every write and truncate, even by root.
	caps := make([]byte, 20) // vfs_cap_data revision 2: cap_net_bind_service, effective
	binary.LittleEndian.PutUint32(caps[0:], 0x02000001)
	binary.LittleEndian.PutUint32(caps[4:], 1<<10)
	for i, change := range [][]string{
		nil, // dd writes a byte
		{"truncate", "-s", "1"},
	} {
		p := file("caps"+string(rune('a'+i)), 0o755)
		if err := unix.Setxattr(p, "security.capability", caps, 0); err != nil {
			t.Skipf("skipping: cannot set file capabilities: %v", err)
		}
		for round := range 2 { // the second time the daemon may remember the first check
			if round > 0 {
				testutil.Check(t, unix.Setxattr(p, "security.capability", caps, 0))
			}
			if len(change) == 0 {
				write(p, true)
			} else {
				write(p, true, append(change, p)...)
			}
			if _, err := unix.Getxattr(p, "security.capability", make([]byte, 64)); !errors.Is(err, unix.ENODATA) {
				t.Errorf("%s, round %d: security.capability after %v: %v, want ENODATA", filepath.Base(p), round, change, err)
			}
		}
	}
}

func unixModeBits(perm uint32) os.FileMode {
	var m os.FileMode
	if perm&0o4000 != 0 {
		m |= os.ModeSetuid
	}
	if perm&0o2000 != 0 {
		m |= os.ModeSetgid
	}
	return m
}
