package tests

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/voltest"
)

// TestFullDisk puts a store on a small tmpfs and fills it: writers get
// ENOSPC (from write, fsync or close; never EIO, never success followed by
// loss), fsync'd files stay intact, the daemon keeps running, and the
// volume works again once files are deleted or the file system grows.
// Then the disk is filled from outside doppel, below the space doppel
// keeps for its metadata, until the metadata store itself fails: the
// daemon reports it, keeps serving reads, unmounts cleanly, and the store
// mounts again with everything fsync'd and passes fsck.
func TestFullDisk(t *testing.T) {
	requireDoppel(t)
	if voltest.S3() {
		t.Skip("skipping: the chunk data is in S3 and the metadata in PostgreSQL; the store directory holds only the read cache, so filling its disk fills nothing the volume needs")
	}
	if os.Geteuid() != 0 {
		t.Skip("skipping: mounting the small tmpfs this test fills needs root")
	}
	fs := realTempDir(t)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", fs).CombinedOutput(); err != nil {
		t.Skipf("skipping: cannot mount a tmpfs (%v: %s)", err, out)
	}
	// Registered before the volume's cleanup, so it runs after it.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", fs).CombinedOutput(); err != nil {
			t.Errorf("umount tmpfs: %v %s", err, out)
		}
	})
	v := newVolumeAt(t, filepath.Join(fs, "store"))

	kept := map[string][]byte{} // fsync'd: must survive everything below
	for i, size := range []int{6 * MiB, 3 * MiB, 1000} {
		name := fmt.Sprintf("kept%d", i)
		kept[name] = testutil.SeededBytes(200+uint64(i), size)
		writeFileSync(t, v.path(name), kept[name])
	}

	// Fill the volume until writing fails.
	filled := fillVolume(t, v, "a", 300)
	if len(filled) == 0 {
		t.Fatal("not even one file fitted; the test needs more room")
	}
	checkFiles(t, v, kept, filled)
	t.Logf("full after %d files of 2 MiB; df: %+v", len(filled), v.df(t).Raw)

	// Deleting gives the space back, and writes work again.
	for name := range filled {
		if err := os.Remove(v.path(name)); err != nil {
			t.Fatalf("delete on a full volume: %v", err)
		}
	}
	waitWritable(t, v, 2*MiB)
	writeFileSync(t, v.path("after-delete"), testutil.SeededBytes(301, 2*MiB))
	kept["after-delete"] = testutil.SeededBytes(301, 2*MiB)

	// Full again; growing the file system helps too.
	filled = fillVolume(t, v, "b", 302)
	if out, err := exec.Command("mount", "-o", "remount,size=96m", fs).CombinedOutput(); err != nil {
		t.Fatalf("grow tmpfs: %v %s", err, out)
	}
	writeFileSync(t, v.path("after-grow"), testutil.SeededBytes(303, 8*MiB))
	kept["after-grow"] = testutil.SeededBytes(303, 8*MiB)
	checkFiles(t, v, kept, filled)
	if voltest.Postgres() {
		// The rest fills the disk under the metadata store, and a shared
		// volume's metadata is on the PostgreSQL server, not this disk.
		t.Log("the metadata is in PostgreSQL: not filling the store's disk under it")
		v.umount(t)
		v.fsck(t)
		return
	}

	// Now another program takes every free byte, the space doppel keeps
	// for metadata included. Changes that only touch metadata go on until
	// the metadata store cannot write its log: that change gets ENOSPC,
	// later ones EIO, and nothing hangs or crashes.
	if err := os.WriteFile(v.path("ping"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(fs, "filler")
	fillHost(t, filler)
	n, err := renameUntilFailure(v)
	t.Logf("with no free byte, %d renames went through before: %v", n, err)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("renames on a host file system with no free byte: first failure %v, want ENOSPC", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(v.path("after-failure"), []byte("x"), 0o644); !errors.Is(err, syscall.EIO) {
		t.Errorf("create after the metadata store failed, with space back: %v, want EIO", err)
	}
	checkFiles(t, v, kept, filled) // reads go on
	wantLogLine(t, v.Store, "the metadata store failed")

	// Unmounting ends the daemon; the store mounts again and is whole.
	v.umount(t)
	v.mount(t)
	checkFiles(t, v, kept, filled)
	writeFileSync(t, v.path("after-remount"), testutil.SeededBytes(304, MiB))
	v.umount(t)
	v.fsck(t)
}

// fillVolume writes 2 MiB files named prefix-N (fsync'd) until one fails,
// and requires that failure to be ENOSPC. It returns the files that were
// written completely. The file that failed holds only a prefix of what
// was written to it, or nothing.
func fillVolume(t *testing.T, v *volume, prefix string, seed uint64) map[string][]byte {
	t.Helper()
	done := map[string][]byte{}
	for i := 0; i < 1000; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		data := testutil.SeededBytes(seed*1000+uint64(i), 2*MiB)
		err := writeFileErr(v.path(name), data)
		if err == nil {
			done[name] = data
			continue
		}
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("writing %s on a full volume: %v, want ENOSPC", name, err)
		}
		got, rerr := os.ReadFile(v.path(name))
		if rerr != nil {
			t.Fatalf("reading %s after ENOSPC: %v", name, rerr)
		}
		if len(got) > len(data) || !bytes.Equal(got, data[:len(got)]) {
			t.Errorf("%s after ENOSPC holds %d bytes that are not a prefix of what was written", name, len(got))
		}
		t.Logf("%s: %v after %d of %d bytes", name, err, len(got), len(data))
		return done
	}
	t.Fatal("the volume never filled up")
	return nil
}

// writeFileErr creates path, writes data in 1 MiB pieces, fsyncs and
// closes it, and returns the first error.
func writeFileErr(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	for off := 0; off < len(data) && err == nil; off += MiB {
		_, err = f.Write(data[off:min(off+MiB, len(data))])
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// checkFiles requires every file of the maps to read back as written.
func checkFiles(t *testing.T, v *volume, sets ...map[string][]byte) {
	t.Helper()
	for _, set := range sets {
		for name, data := range set {
			checkFile(t, v.path(name), data)
		}
	}
}

// waitWritable waits until the mount reports n bytes free: freed chunks
// are punched out by the reclaimer shortly after the delete.
func waitWritable(t *testing.T, v *volume, n int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var st syscall.Statfs_t
		if err := syscall.Statfs(v.Mnt, &st); err != nil {
			t.Fatal(err)
		}
		if int64(st.Bavail)*st.Bsize >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("deleting files did not free %d bytes (statfs of the mount: %+v)", n, st)
		}
	}
}

// fillHost writes path until its file system has no free byte left.
func fillHost(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	for n := len(buf) / 2; n > 0; n /= 2 { // the last partial pages too
		f.Write(buf[:n])
	}
}

// renameUntilFailure renames a file back and forth: every rename writes
// to the metadata store's log. It returns how many went through, and the
// first error. Pebble's log takes a few MiB at most before it needs more
// space, far less than the renames tried.
func renameUntilFailure(v *volume) (int, error) {
	a, b := v.path("ping"), v.path("pong")
	for i := 0; i < 200000; i++ {
		if err := os.Rename(a, b); err != nil {
			return i, err
		}
		a, b = b, a
	}
	return 200000, nil
}

// wantLogLine requires the daemon log of store to contain s.
func wantLogLine(t *testing.T, store, s string) {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(store, "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(log, []byte(s)) {
		t.Errorf("the daemon log does not say %q:\n%s", s, log)
	}
}
