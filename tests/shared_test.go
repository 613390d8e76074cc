package tests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/pgtest"
)

// TestSharedVolumeEndToEnd: a shared volume (metadata in PostgreSQL) made
// with --meta-file from a URL carrying the password, mounted with the
// password from PGPASSWORD only: files written through FUSE read back, a
// clone is isolated from its source both ways, df works, and after an
// unmount fsck finds it clean and a remount shows the same files. The
// store directory holds no password and shared.json is 0600. Runs on its
// own PostgreSQL server whatever DOPPEL_TEST_META says; the server is
// stopped after the volume is unmounted (cleanups run in reverse).
func TestSharedVolumeEndToEnd(t *testing.T) {
	requireDoppel(t)
	srv := pgtest.Start(t)
	dsn := srv.CreateDB(t, "e2e")
	t.Setenv("PGPASSWORD", srv.Password) // the daemon inherits it
	urlFile := filepath.Join(t.TempDir(), "url")
	testutil.Check(t, os.WriteFile(urlFile, []byte(dsn+"\n"), 0o600))
	v := newVolumeAt(t, realTempDir(t), "--meta-file", urlFile, "--chunking", "fixed:16K")

	// The store keeps the connection without the password.
	st, err := os.Stat(filepath.Join(v.Store, "shared.json"))
	testutil.Check(t, err)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("shared.json mode %04o, want 0600", st.Mode().Perm())
	}
	filepath.Walk(v.Store, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(srv.Password)) {
				t.Errorf("%s holds the password", p)
			}
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(v.Store, "meta")); err == nil {
		t.Errorf("a shared volume's store has a Pebble directory")
	}

	big := testutil.SeededBytes(11, 3<<20)
	testutil.Check(t, os.MkdirAll(v.path("src", "sub"), 0o755))
	testutil.Check(t, os.WriteFile(v.path("src", "big"), big, 0o644))
	testutil.Check(t, os.WriteFile(v.path("src", "sub", "small"), []byte("hello"), 0o644))
	testutil.Check(t, os.WriteFile(v.path("src", "dup"), big, 0o644)) // deduplicated
	cloneKeepsChangesApart(t, v, big)
	if out, err := runDoppel(time.Minute, "df", "--store", v.Store); err != nil || strings.Contains(string(out), srv.Password) {
		t.Errorf("doppel df: %v\n%s", err, out)
	}
	v.umount(t)
	v.fsck(t)
	v.mount(t)
	wantFile(t, v.path("src", "big"), big)
	wantFile(t, v.path("copy", "big"), big)
	wantFile(t, v.path("copy", "sub", "small"), []byte("changed in the clone"))
	v.umount(t)

	// Without the password the mount fails and says where it belongs.
	t.Setenv("PGPASSWORD", "")
	os.Unsetenv("PGPASSWORD")
	t.Setenv("PGPASSFILE", filepath.Join(t.TempDir(), "none"))
	out, err := exec.Command(doppelBin, "mount", "--store", v.Store, v.Mnt).CombinedOutput()
	if err == nil {
		v.mounted = true
		t.Fatalf("mounted without a password:\n%s", out)
	}
	if !strings.Contains(string(out), "PGPASSWORD") {
		t.Errorf("mount without a password: %v\n%s\nwant a hint naming PGPASSWORD", err, out)
	}
	// A shared.json others may read is refused, password or not.
	t.Setenv("PGPASSWORD", srv.Password)
	testutil.Check(t, os.Chmod(filepath.Join(v.Store, "shared.json"), 0o640))
	out, err = exec.Command(doppelBin, "fsck", "--store", v.Store).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "chmod 600") {
		t.Errorf("fsck with shared.json mode 0640: %v\n%s\nwant a refusal saying chmod 600", err, out)
	}
}

// cloneKeepsChangesApart clones src (holding sub/small = "hello" and dup =
// big) to copy, changes each side, and checks that neither change shows
// on the other.
func cloneKeepsChangesApart(t *testing.T, v *volume, big []byte) {
	t.Helper()
	if out, err := runDoppel(time.Minute, "clone", v.path("src"), v.path("copy")); err != nil {
		t.Fatalf("doppel clone: %v\n%s", err, out)
	}
	testutil.Check(t, os.WriteFile(v.path("copy", "sub", "small"), []byte("changed in the clone"), 0o644))
	testutil.Check(t, os.Remove(v.path("src", "dup")))
	wantFile(t, v.path("src", "sub", "small"), []byte("hello"))
	wantFile(t, v.path("copy", "sub", "small"), []byte("changed in the clone"))
	wantFile(t, v.path("copy", "dup"), big)
	if _, err := os.Stat(v.path("src", "dup")); !os.IsNotExist(err) {
		t.Errorf("src/dup after its removal: %v", err)
	}
}

func wantFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes differ from the %d written", path, len(got), len(want))
	}
}
