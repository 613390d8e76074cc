package tests

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestImport imports a tree with every kind of entry into a mounted
// volume (the daemon does the work) and into an unmounted one (the CLI
// opens the store), and compares the result with the source: content,
// modes, sizes, link structure, xattrs, then owners and times.
func TestImport(t *testing.T) {
	requireDoppel(t)
	src := importSource(t)
	t.Run("Mounted", func(t *testing.T) {
		v := newVolume(t)
		out := importOK(t, src, v.path("dst"))
		checkImported(t, src, v.path("dst"), out)
		// An existing directory as DST receives SRC under its own name.
		testutil.Check(t, os.Mkdir(v.path("into"), 0o755))
		importOK(t, src, v.path("into"))
		compareDirs(t, src, v.path("into", filepath.Base(src)))
		v.umount(t)
		v.fsck(t)
	})
	t.Run("Unmounted", func(t *testing.T) {
		v := newVolume(t)
		v.umount(t)
		out := importOK(t, "--store", v.Store, src, "/dst")
		v.mount(t)
		checkImported(t, src, v.path("dst"), out)
		v.umount(t)
		v.fsck(t)
	})
}

// importSource builds the tree TestImport imports: persistence's tree
// (sizes, holes, links, symlinks, fifo, xattrs, modes) plus a file of
// several import windows, owners and nanosecond times.
func importSource(t *testing.T) string {
	src := filepath.Join(realTempDir(t), "src")
	testutil.Check(t, os.Mkdir(src, 0o755))
	buildTree(t, src)
	testutil.Check(t, os.WriteFile(filepath.Join(src, "dir", "large"), testutil.SeededBytes(40, 20*MiB+5), 0o644))
	if os.Geteuid() == 0 {
		testutil.Check(t, os.Lchown(filepath.Join(src, "size-1"), 1234, 5678))
		testutil.Check(t, os.Lchown(filepath.Join(src, "dir"), 42, 43))
		testutil.Check(t, os.Lchown(filepath.Join(src, "link-rel"), 7, 8))
	}
	stampTimes(t, src)
	return src
}

// stampTimes gives every entry below root distinct nanosecond times,
// deepest entries first so that directories keep theirs; atimes in the
// future so that no read moves them (relatime).
func stampTimes(t *testing.T, root string) {
	var paths []string
	testutil.Check(t, filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		paths = append(paths, p)
		return err
	}))
	base := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	for i := len(paths) - 1; i >= 0; i-- {
		ts := []unix.Timespec{
			unix.NsecToTimespec(base.Add(72*time.Hour + time.Duration(i*1001)).UnixNano()),
			unix.NsecToTimespec(base.Add(time.Duration(i*1000 + 7)).UnixNano()),
		}
		testutil.Check(t, unix.UtimesNanoAt(unix.AT_FDCWD, paths[i], ts, unix.AT_SYMLINK_NOFOLLOW))
	}
}

// importOK runs doppel import with args and returns its output.
func importOK(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runDoppel(5*time.Minute, append([]string{"import"}, args...)...)
	if err != nil {
		t.Fatalf("doppel import %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// checkImported compares owners and times first (reading content through
// the mount must not be what sets them), then everything compareDirs
// does, and that holes stayed holes.
func checkImported(t *testing.T, src, dst, out string) {
	t.Helper()
	if !strings.Contains(out, "imported "+src+" -> ") {
		t.Errorf("no summary in the output:\n%s", out)
	}
	compareMeta(t, src, dst)
	compareDirs(t, src, dst)
	var st unix.Stat_t
	testutil.Check(t, unix.Stat(filepath.Join(dst, "holey"), &st))
	if st.Blocks*512 > 1*MiB {
		t.Errorf("holey (8 KiB of data in %d bytes) maps %d bytes: holes were filled", st.Size, st.Blocks*512)
	}
}

// compareMeta requires every entry of dst to have the owner, times and
// device number of its source entry.
func compareMeta(t *testing.T, src, dst string) {
	t.Helper()
	var diffs []string
	err := filepath.WalkDir(src, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		var a, b unix.Stat_t
		if err := unix.Lstat(p, &a); err != nil {
			return err
		}
		if err := unix.Lstat(filepath.Join(dst, rel), &b); err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: %v", rel, err))
			return nil
		}
		if a.Uid != b.Uid || a.Gid != b.Gid || a.Rdev != b.Rdev || a.Mtim != b.Mtim || a.Atim != b.Atim {
			diffs = append(diffs, fmt.Sprintf("%s: owner %d:%d mtime %v atime %v rdev %d; imported %d:%d %v %v %d", rel,
				a.Uid, a.Gid, a.Mtim, a.Atim, a.Rdev, b.Uid, b.Gid, b.Mtim, b.Atim, b.Rdev))
		}
		return nil
	})
	testutil.Check(t, err)
	for _, d := range diffs {
		t.Error(d)
	}
}

// TestImportErrors checks the failure contract: an unreadable source file
// is named, left out, and makes the exit status 1 while the rest is
// imported; refused arguments change nothing in the volume.
func TestImportErrors(t *testing.T) {
	requireDoppel(t)
	// Root reads anything: drop the capabilities that let it, for the
	// daemon and for the CLI.
	var noDAC []string
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("setpriv"); err != nil {
			t.Skip("running as root without setpriv: cannot make a file unreadable")
		}
		noDAC = []string{"setpriv", "--bounding-set=-dac_override,-dac_read_search"}
	}
	src := filepath.Join(realTempDir(t), "src")
	testutil.Check(t, os.MkdirAll(filepath.Join(src, "sub"), 0o755))
	testutil.Check(t, os.WriteFile(filepath.Join(src, "ok"), []byte("fine\n"), 0o644))
	testutil.Check(t, os.WriteFile(filepath.Join(src, "sub", "secret"), testutil.SeededBytes(41, 3*MiB), 0o000))
	testutil.Check(t, os.WriteFile(filepath.Join(src, "sub", "after"), testutil.SeededBytes(42, 100), 0o644))
	want := filepath.Join(realTempDir(t), "want")
	testutil.Check(t, os.MkdirAll(filepath.Join(want, "sub"), 0o755))
	testutil.Check(t, os.WriteFile(filepath.Join(want, "ok"), []byte("fine\n"), 0o644))
	testutil.Check(t, os.WriteFile(filepath.Join(want, "sub", "after"), testutil.SeededBytes(42, 100), 0o644))

	v := newVolume(t)
	v.wrapper = noDAC
	v.remount(t) // the daemon cannot read the secret either
	precious := testutil.SeededBytes(43, 2*MiB)
	writeFileSync(t, v.path("precious"), precious)

	run := func(args ...string) (string, error) {
		cmd := exec.Command(doppelBin, append([]string{"import"}, args...)...)
		if noDAC != nil {
			cmd = exec.Command(noDAC[0], append(noDAC[1:], cmd.Args...)...)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// Through the mount, through --store (the daemon serves both), and
	// offline.
	for _, args := range [][]string{{src, v.path("dst")}, {"--store", v.Store, src, "/dst2"}, {"--store", v.Store, src, "/dst3"}} {
		dst := args[len(args)-1]
		if dst == "/dst3" {
			v.umount(t)
		}
		out, err := run(args...)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Errorf("import to %s with an unreadable file: %v, want exit status 1\n%s", dst, err, out)
		}
		secret := filepath.Join(src, "sub", "secret")
		if !strings.Contains(out, "cannot import "+secret+": open: permission denied") {
			t.Errorf("import to %s: the output does not name the unreadable file and why:\n%s", dst, out)
		}
		if dst == "/dst3" {
			v.mount(t)
		}
		compareDirs(t, want, v.path(strings.TrimPrefix(dst, v.Mnt)))
	}
	testutil.Check(t, os.MkdirAll(v.path("d", filepath.Base(src)), 0o755))
	for _, c := range []struct{ dst, why string }{
		{v.path("precious"), "already exists"},
		{v.path("d"), "already exists"}, // d/src does
		{v.path("nowhere", "dst"), "does not exist"},
	} {
		if out, err := run(src, c.dst); err == nil || !strings.Contains(out, c.why) {
			t.Errorf("import to %s: %v, want an error saying %q\n%s", c.dst, err, c.why, out)
		}
	}
	if out, err := run(v.path("dst"), v.path("copy")); err == nil || !strings.Contains(out, "inside the destination volume") {
		t.Errorf("import from inside the volume: %v\n%s", err, out)
	}
	checkFile(t, v.path("precious"), precious)
	v.umount(t)
	v.fsck(t)
}

// TestImportInterruptedByUmount unmounts while the daemon imports: the
// unmount succeeds, the import is interrupted (or had just finished), and
// the volume is consistent.
func TestImportInterruptedByUmount(t *testing.T) {
	v := newVolume(t)
	src := realTempDir(t)
	for i := range 64 {
		testutil.Check(t, os.WriteFile(filepath.Join(src, fmt.Sprintf("f%02d", i)), testutil.SeededBytes(uint64(50+i), 2*MiB), 0o644))
	}
	var out strings.Builder
	cmd := exec.Command(doppelBin, "import", src, v.path("dst"))
	cmd.Stdout, cmd.Stderr = &out, &out
	testutil.Check(t, cmd.Start())
	defer cmd.Process.Kill()
	for {
		if _, err := os.Stat(v.path("dst")); err == nil {
			break
		}
		if cmd.ProcessState != nil {
			t.Fatalf("import ended before it created anything:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	v.umount(t) // checks that the daemon is gone too
	err := cmd.Wait()
	if err != nil && !strings.Contains(out.String(), "interrupted") && !strings.Contains(out.String(), "broke off") {
		t.Errorf("import: %v, without saying it was interrupted:\n%s", err, out.String())
	}
	t.Logf("import: %v\n%s", err, out.String())
	v.fsck(t)
}

// TestImportDiskImagesDeduplicated imports two copies of a disk image
// (files whose own xattr asks for 4 KiB blocks) into an unmounted volume:
// their blocks are written owned, which no dedup lookup finds, and the
// import ends with a pass that shares them, so the volume keeps the image
// once.
func TestImportDiskImagesDeduplicated(t *testing.T) {
	requireDoppel(t)
	skipUnlessOwnedBlocks(t)
	src := filepath.Join(realTempDir(t), "images")
	testutil.Check(t, os.Mkdir(src, 0o755))
	img := testutil.SeededBytes(41, 8*MiB)
	for _, name := range []string{"a.img", "b.img"} {
		p := filepath.Join(src, name)
		testutil.Check(t, os.WriteFile(p, img, 0o644))
		testutil.Check(t, unix.Setxattr(p, "user.doppel.chunking", []byte("fixed:4K"), 0))
	}
	v := newVolume(t)
	v.umount(t)
	importOK(t, "--store", v.Store, src, "/images")
	df := storeDF(t, v.Store)
	t.Logf("after the import: %v", df)
	if df["physical_bytes"] != 8*MiB || df["logical_bytes"] != 16*MiB {
		t.Errorf("two 8 MiB images imported: %d bytes stored for %d; want the image once", df["physical_bytes"], df["logical_bytes"])
	}
	v.mount(t)
	for _, name := range []string{"a.img", "b.img"} {
		if b, err := os.ReadFile(v.path("images", name)); err != nil || !bytes.Equal(b, img) {
			t.Errorf("%s reads back other bytes (%v)", name, err)
		}
	}
	v.umount(t)
	v.fsck(t)
}
