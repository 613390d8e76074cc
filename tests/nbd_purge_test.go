package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestBlockPurge is issue 15's purge scenario, small: ext4 on a loop
// device whose backing file is a plain sparse file on the host (the
// limit), a volume file through the FUSE mount alone, or a doppel nbd
// export through nbdfuse; a tree of 24 MiB written, deleted, and the space
// given back by -o discard or by fstrim. The volume must end up holding
// no more than the sparse file does, and most of the tree's chunks must
// be freed.
func TestBlockPurge(t *testing.T) {
	requireLoop(t)
	for _, discard := range []string{"discard", "fstrim"} {
		t.Run(discard, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "plain.img")
			testutil.Check(t, os.WriteFile(img, nil, 0o644))
			testutil.Check(t, os.Truncate(img, 256*mib))
			limit := purge(t, img, discard, 0, 0, func() int64 {
				var st syscall.Stat_t
				testutil.Check(t, syscall.Stat(img, &st))
				return st.Blocks * 512
			})
			t.Logf("plain sparse file: %d bytes held after the delete", limit)

			t.Run("fuse", func(t *testing.T) {
				v := newVolume(t)
				disk := v.path("disk.img")
				testutil.Check(t, os.WriteFile(disk, nil, 0o644))
				testutil.Check(t, syscall.Setxattr(disk, "user.doppel.chunking", []byte("fixed:4K"), 0))
				testutil.Check(t, os.Truncate(disk, 256*mib))
				// On S3 a pack the tree shares with ext4's live blocks
				// gives its dead bytes back when compaction rewrites it
				// (make test-shared runs compaction every 20 ms).
				purge(t, disk, discard, limit, 20*mib, func() int64 { return storeDF(t, v.Store)["allocated_bytes"] })
			})
			t.Run("nbd", func(t *testing.T) {
				requireNBDTools(t, "nbdfuse")
				store := newStore(t)
				srv := startNBD(t, "--store", store, "--create", "256M", "/disk.img")
				dir := realTempDir(t)
				fuse := exec.Command("nbdfuse", dir, srv.URI("disk.img"))
				testutil.Check(t, fuse.Start())
				t.Cleanup(func() {
					exec.Command("fusermount3", "-u", dir).Run()
					fuse.Wait()
				})
				dev := filepath.Join(dir, "nbd")
				for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
					if _, err := os.Stat(dev); err == nil {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("nbdfuse did not show the export")
					}
				}
				purge(t, dev, discard, limit, 20*mib, func() int64 { return storeDF(t, store)["allocated_bytes"] })
			})
		})
	}
}

// requireLoop skips t unless it may attach loop devices and make ext4.
func requireLoop(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for losetup and mount")
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "fstrim"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skip("no loop devices here")
	}
}

// purge runs the scenario on dev and returns what held says once the
// delete's space is back. With limit > 0 it waits (at most a minute) for
// held to reach limit and for at least minFreed bytes of the 24 MiB tree
// to be freed.
func purge(t *testing.T, dev, discard string, limit, minFreed int64, held func() int64) int64 {
	t.Helper()
	out, err := exec.Command("losetup", "-f", "--show", dev).CombinedOutput()
	if err != nil {
		t.Skipf("losetup: %v %s", err, out)
	}
	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", loop).Run() })
	run(t, "mkfs.ext4", "-q", "-E", "nodiscard", loop)
	fs := t.TempDir()
	opts := []string{loop, fs}
	if discard == "discard" {
		opts = append([]string{"-o", "discard"}, opts...)
	}
	run(t, "mount", opts...)
	t.Cleanup(func() { exec.Command("umount", fs).Run() })

	for i := range 48 {
		d := filepath.Join(fs, "tree", fmt.Sprint(i%6))
		testutil.Check(t, os.MkdirAll(d, 0o755))
		testutil.Check(t, os.WriteFile(filepath.Join(d, fmt.Sprint(i)), testutil.SeededBytes(uint64(i), 512<<10), 0o644))
	}
	syscall.Sync()
	peak := held()
	start := time.Now()
	testutil.Check(t, os.RemoveAll(filepath.Join(fs, "tree")))
	syscall.Sync()
	if discard == "fstrim" {
		run(t, "fstrim", fs)
	}
	if limit == 0 {
		time.Sleep(time.Second) // the host's own discard, if any
		return held()
	}
	// ext4 sends its discards over a while (-o discard: as the deletes
	// commit), so wait for both conditions: the limit alone may be met
	// early when the sparse file's own measurement was taken before all
	// of its discards landed.
	now := held()
	for deadline := time.Now().Add(time.Minute); now > limit || peak-now < minFreed; now = held() {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes held a minute after the delete, %d of the 24 MiB tree freed; want at most the plain sparse file's %d and at least %d freed",
				now, peak-now, limit, minFreed)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("held %d bytes at the peak, %d %v after the delete began (the sparse file: %d)", peak, now, time.Since(start).Round(10*time.Millisecond), limit)
	return now
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}
