package tests

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/testutil"
)

// testFallocateShift runs collapse, insert and unshare on a file of the
// mount and on a file of the host, each case from the same content. The
// kernel's FUSE client (through 6.18 at least) refuses all three with
// EOPNOTSUPP without asking the daemon, so on the mount they must fail
// that way and leave the file alone; should a kernel pass them on, the
// mount must give the host's results (for unshare, those of a plain
// allocation: ext4 has no unshare, and doppel's chunks are never shared
// in place).
func testFallocateShift(t *testing.T, d string) {
	const size = 256 << 10
	data := testutil.SeededBytes(21, size)
	host, mnt := filepath.Join(realTempDir(t), "f"), filepath.Join(d, "f")
	for _, c := range []struct {
		name   string
		mode   uint32
		off, n int64
	}{
		{"collapse", unix.FALLOC_FL_COLLAPSE_RANGE, 8192, 16384},
		{"collapse, misaligned", unix.FALLOC_FL_COLLAPSE_RANGE, 100, 4096},
		{"collapse to EOF", unix.FALLOC_FL_COLLAPSE_RANGE, size - 4096, 4096},
		{"insert", unix.FALLOC_FL_INSERT_RANGE, 4096, 8192},
		{"insert at EOF", unix.FALLOC_FL_INSERT_RANGE, size, 4096},
		{"insert|KEEP_SIZE", unix.FALLOC_FL_INSERT_RANGE | unix.FALLOC_FL_KEEP_SIZE, 0, 4096},
		{"unshare", unix.FALLOC_FL_UNSHARE_RANGE, 0, size + 5000},
		{"unshare|KEEP_SIZE", unix.FALLOC_FL_UNSHARE_RANGE | unix.FALLOC_FL_KEEP_SIZE, 0, size + 5000},
	} {
		testutil.Check(t, os.WriteFile(host, data, 0o644))
		testutil.Check(t, os.WriteFile(mnt, data, 0o644))
		hostMode := c.mode &^ unix.FALLOC_FL_UNSHARE_RANGE
		errH := withFd(host, func(fd int) error { return unix.Fallocate(fd, hostMode, c.off, c.n) })
		errM := withFd(mnt, func(fd int) error { return unix.Fallocate(fd, c.mode, c.off, c.n) })
		want, err := os.ReadFile(host)
		testutil.Check(t, err)
		if errM == unix.EOPNOTSUPP {
			t.Logf("%s: the kernel refused it (host: %v)", c.name, errH)
			want = data
		} else if errM != errH {
			t.Errorf("%s: mount %v, host %v", c.name, errM, errH)
			continue
		}
		got, err := os.ReadFile(mnt)
		testutil.Check(t, err)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the mount's file has %d bytes, not the %d expected", c.name, len(got), len(want))
		}
	}
}
