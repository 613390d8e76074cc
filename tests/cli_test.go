package tests

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
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
		file := filepath.Join(store, "precious")
		for _, c := range []struct{ store, want string }{{store, "not empty"}, {file, "not a directory"}} {
			before := treeDigest(t, store)
			wantFailure(t, c.want, "init", "--store", c.store)
			if treeDigest(t, store) != before {
				t.Errorf("a refused init --store %s changed the directory", c.store)
			}
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
		data := testutil.SeededBytes(34, MiB)
		writeFileSync(t, v.path("f"), data)
		wantFailure(t, "in use", "mount", "--store", v.Store, second.Mnt)
		if isMounted(second.Mnt) || len(daemonPIDs(second.Mnt)) > 0 {
			t.Errorf("a failed mount left a mount or daemon behind")
		}
		wantFailure(t, "already holds a doppel volume", "init", "--store", v.Store)
		// fsck of a mounted store runs in its daemon (online) instead.
		if out, err := runDoppel(time.Minute, "fsck", "--store", v.Store); err != nil {
			t.Errorf("online fsck of the mounted store: %v\n%s", err, out)
		}
		v.df(t) // the first mount still works
		checkFile(t, v.path("f"), data)
	})

	t.Run("DfOnUnmountedStore", func(t *testing.T) {
		v := newVolume(t)
		writeFileSync(t, v.path("f"), testutil.SeededBytes(30, MiB))
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
		data := testutil.SeededBytes(33, 3*MiB)
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
		spare := realTempDir(t) // an unmounted volume
		if out, err := runDoppel(time.Minute, "init", "--store", spare); err != nil {
			t.Fatalf("init: %v\n%s", err, out)
		}
		for _, c := range []struct {
			name string
			args []string
			want string
		}{
			{"not a volume", []string{"mount", "--store", notVolume, realTempDir(t)}, "not a doppel volume"},
			{"missing store", []string{"mount", "--store", filepath.Join(notVolume, "nope"), realTempDir(t)}, "does not exist"},
			{"store is a file", []string{"mount", "--store", file, realTempDir(t)}, "not a directory"},
			{"mount point is a file", []string{"mount", "--store", notVolume, file}, "not a directory"},
			{"mount point missing", []string{"mount", "--store", notVolume, filepath.Join(notVolume, "nope")}, "does not exist"},
			{"mount point not empty", []string{"mount", "--store", spare, filepath.Dir(file)}, "not empty"},
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
		if _, err := os.Stat(file); err != nil || isMounted(filepath.Dir(file)) {
			t.Errorf("the files of a non-empty mount point are hidden after a refused mount: %v", err)
		}
	})

	t.Run("NotAStore", func(t *testing.T) {
		dir := realTempDir(t)
		if err := os.WriteFile(filepath.Join(dir, "precious"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "precious")
		before := treeDigest(t, dir)
		for _, c := range []struct{ store, want string }{
			{dir, "not a doppel volume"}, {file, "not a directory"}, {filepath.Join(dir, "nope"), "does not exist"},
		} {
			for _, cmd := range [][]string{{"df"}, {"sync"}, {"fsck"}, {"mount", realTempDir(t)}} {
				wantFailure(t, c.want, append(append([]string{}, cmd...), "--store", c.store)...)
			}
		}
		if treeDigest(t, dir) != before {
			t.Error("commands refused on a directory that is not a store changed it")
		}
	})

	t.Run("NewerFormatRefused", func(t *testing.T) {
		v := newVolume(t)
		data := testutil.SeededBytes(35, 2*MiB)
		writeFileSync(t, v.path("f"), data)
		v.umount(t)
		commands := [][]string{{"mount", "--store", v.Store, v.Mnt}, {"df", "--store", v.Store},
			{"sync", "--store", v.Store}, {"fsck", "--store", v.Store}, {"init", "--store", v.Store}}

		// The format file says a newer doppel wrote the volume: nothing
		// opens it, so not a byte of the store changes.
		formatFile := filepath.Join(v.Store, "doppel.json")
		orig, err := os.ReadFile(formatFile)
		if err != nil {
			t.Fatal(err)
		}
		newer := regexp.MustCompile(`"doppel_format": [0-9]+`).ReplaceAllString(string(orig), `"doppel_format": 99`)
		if newer == string(orig) {
			t.Fatalf("unexpected format file:\n%s", orig)
		}
		if err := os.WriteFile(formatFile, []byte(newer), 0o600); err != nil {
			t.Fatal(err)
		}
		before := treeDigest(t, v.Store)
		for _, args := range commands {
			want := "upgrade doppel"
			if args[0] == "init" {
				want = "already holds a doppel volume"
			}
			wantFailure(t, want, args...)
		}
		if treeDigest(t, v.Store) != before {
			t.Error("commands refused on a newer volume changed its store")
		}
		if isMounted(v.Mnt) {
			t.Fatal("a newer volume got mounted")
		}
		if err := os.WriteFile(formatFile, orig, 0o600); err != nil {
			t.Fatal(err)
		}

		// The metadata store's own configuration says so.
		was := setMetaFormat(t, v.Store, 99)
		for _, args := range commands {
			want := "upgrade doppel"
			if args[0] == "init" {
				want = "already holds a doppel volume"
			}
			wantFailure(t, want, args...)
		}
		if isMounted(v.Mnt) {
			t.Fatal("a newer volume got mounted")
		}
		setMetaFormat(t, v.Store, was)
		v.mount(t)
		checkFile(t, v.path("f"), data)
	})
}

// wantFailure runs doppel with args and requires a non-zero exit status
// and a message containing want.
func wantFailure(t *testing.T, want string, args ...string) {
	t.Helper()
	out, err := runDoppel(time.Minute, args...)
	if err == nil {
		t.Errorf("doppel %s succeeded; want an error saying %q", strings.Join(args, " "), want)
		return
	}
	if !strings.Contains(string(out), want) {
		t.Errorf("doppel %s: message %q does not say %q", strings.Join(args, " "), strings.TrimSpace(string(out)), want)
	}
}

// treeDigest summarises every file under dir (names, sizes, contents), to
// tell whether anything changed.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v\n", p, d.Type())
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// setMetaFormat rewrites the format number in the configuration record of
// an unmounted volume's metadata store.
// setMetaFormat sets the format the volume's metadata config says and
// returns the one it said before.
func setMetaFormat(t *testing.T, store string, format int) (was int) {
	t.Helper()
	editStoreMeta(t, store, func(b meta.Batch) error {
		raw, err := b.Get(schema.KeyConfig)
		if err != nil {
			return err
		}
		var cfg map[string]any
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return err
		}
		f, _ := cfg["format"].(float64)
		was = int(f)
		cfg["format"] = format
		raw, _ = json.Marshal(cfg)
		return b.Set(schema.KeyConfig, raw)
	})
	return was
}
