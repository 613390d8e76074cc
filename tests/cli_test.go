package tests

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCLI checks the command-line contract the other tests rely on.
func TestCLI(t *testing.T) {
	requireDoppel(t)

	t.Run("InitCreatesMissingDir", func(t *testing.T) {
		store := filepath.Join(realTempDir(t), "new", "store")
		if out, err := runDoppel(time.Minute, "init", "--store", store); err != nil {
			t.Fatalf("init into a missing directory: %v\n%s", err, out)
		}
		if _, err := runDoppel(time.Minute, "init", "--store", store); err == nil {
			t.Errorf("init of an existing volume succeeded")
		}
	})

	t.Run("InitRefusesNonEmptyDir", func(t *testing.T) {
		store := realTempDir(t)
		if err := os.WriteFile(filepath.Join(store, "precious"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := runDoppel(time.Minute, "init", "--store", store); err == nil {
			t.Errorf("init into a non-empty directory succeeded")
		}
	})

	t.Run("InitOptions", func(t *testing.T) {
		for _, args := range [][]string{
			{"--chunking", "cdc:16K:64K:256K"}, {"--chunking", "fixed:4K"},
			{"--compression", "off"}, {"--compression", "zstd"}, {"--compression", "auto"},
		} {
			store := realTempDir(t)
			if out, err := runDoppel(time.Minute, append([]string{"init", "--store", store}, args...)...); err != nil {
				t.Errorf("init %v: %v\n%s", args, err, out)
			}
		}
		if _, err := runDoppel(time.Minute, "init", "--store", realTempDir(t), "--chunking", "bogus"); err == nil {
			t.Errorf("init accepted --chunking bogus")
		}
	})

	t.Run("MountedStoreIsExclusive", func(t *testing.T) {
		v := newVolume(t)
		second := &volume{Store: v.Store, Mnt: realTempDir(t), logPath: filepath.Join(realTempDir(t), "log")}
		t.Cleanup(func() { second.cleanup(t) })
		if _, err := runDoppel(time.Minute, "mount", "--store", v.Store, second.Mnt); err == nil {
			t.Errorf("a second mount of a mounted store succeeded")
		}
		if isMounted(second.Mnt) || len(daemonPIDs(second.Mnt)) > 0 {
			t.Errorf("a failed mount left a mount or daemon behind")
		}
		v.df(t) // the first mount still works
	})

	t.Run("DfOnUnmountedStore", func(t *testing.T) {
		v := newVolume(t)
		writeFileSync(t, v.path("f"), randomBytes(30, MiB))
		mounted := v.df(t)
		v.umount(t)
		offline := v.df(t) // --store
		if offline.LogicalBytes != mounted.LogicalBytes || offline.PhysicalBytes != mounted.PhysicalBytes {
			t.Errorf("df --store after umount %v differs from df on the mount %v", offline.Raw, mounted.Raw)
		}
		if _, err := runDoppel(time.Minute, "umount", v.Mnt); err == nil {
			t.Errorf("umount of a path that is not mounted succeeded")
		}
	})

	t.Run("SigtermUnmountsCleanly", func(t *testing.T) {
		v := newVolume(t)
		data := randomBytes(33, 3*MiB)
		if err := os.WriteFile(v.path("f"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, pid := range daemonPIDs(v.Mnt) {
			if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
		for deadline := time.Now().Add(30 * time.Second); isMounted(v.Mnt) || len(daemonPIDs(v.Mnt)) > 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("SIGTERM did not unmount the volume and stop the daemon")
			}
		}
		v.mounted = false
		v.mount(t)
		checkFile(t, v.path("f"), data)
	})

	t.Run("MountErrorsSayWhy", func(t *testing.T) {
		notVolume := realTempDir(t)
		file := filepath.Join(realTempDir(t), "file")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		v := newVolume(t)
		for _, c := range []struct {
			name string
			args []string
			want string
		}{
			{"not a volume", []string{"mount", "--store", notVolume, realTempDir(t)}, "not a doppel volume"},
			{"missing store", []string{"mount", "--store", filepath.Join(notVolume, "nope"), realTempDir(t)}, "does not exist"},
			{"mount point is a file", []string{"mount", "--store", notVolume, file}, "not a directory"},
			{"mount point busy", []string{"mount", "--store", notVolume, v.Mnt}, "busy"},
			{"store in use", []string{"mount", "--store", v.Store, realTempDir(t)}, "in use"},
		} {
			out, err := runDoppel(time.Minute, c.args...)
			if err == nil {
				t.Errorf("%s: mount succeeded", c.name)
				continue
			}
			if !strings.Contains(string(out), c.want) {
				t.Errorf("%s: message %q does not say %q", c.name, strings.TrimSpace(string(out)), c.want)
			}
		}
	})
}
