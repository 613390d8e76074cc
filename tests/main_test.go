package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/mountinfo"
	"github.com/doppelfs/doppel/internal/testutil/voltest"
)

// Set up once by TestMain.
var (
	moduleRoot string // directory holding go.mod
	doppelBin  string // the binary under test
	buildErr   error  // why doppelBin is unusable, if it is
	fuseErr    error  // why FUSE mounts are impossible here, if they are
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	if creds := os.Getenv(asUserEnv); creds != "" {
		return runAsUserHelper(creds, os.Args[1:]) // a child of runAsUser
	}
	var err error
	if moduleRoot, err = findModuleRoot(); err != nil {
		fmt.Fprintln(os.Stderr, "tests:", err)
		return 2
	}
	fuseErr = checkFUSE()
	tmp, err := os.MkdirTemp("", "doppel-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "tests:", err)
		return 2
	}
	defer os.RemoveAll(tmp)
	doppelBin, buildErr = buildDoppel(tmp)
	// DOPPEL_TEST_META=postgres: every volume newVolume creates is a
	// shared one on a PostgreSQL server the run starts and stops.
	return voltest.Main(m)
}

// findModuleRoot walks up from the working directory (the package
// directory under go test) to the directory holding go.mod.
func findModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// buildDoppel builds ./cmd/doppel and ./cmd/doppel-core, which doppel
// hands most commands to, into dir. DOPPEL_BIN names a prebuilt doppel
// instead (with doppel-core beside it), e.g. one built with -race.
func buildDoppel(dir string) (string, error) {
	if bin := os.Getenv("DOPPEL_BIN"); bin != "" {
		return bin, nil
	}
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/doppel", "./cmd/doppel-core")
	cmd.Dir = moduleRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/doppel ./cmd/doppel-core: %v\n%s", err, out)
	}
	return filepath.Join(dir, "doppel"), nil
}

func checkFUSE() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	f.Close()
	_, err = exec.LookPath("fusermount3")
	return err
}

// requireDoppel skips t when FUSE is unavailable and fails it when the
// binary did not build.
func requireDoppel(t testing.TB) {
	t.Helper()
	if fuseErr != nil {
		t.Skipf("skipping: FUSE is not usable here (%v); mount tests need /dev/fuse and fusermount3", fuseErr)
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

// volume is a doppel volume initialised in a temporary store directory and
// mounted on a temporary mountpoint for the duration of one test.
type volume struct {
	Store   string
	Mnt     string
	logPath string // output of mount commands and, inherited, of the daemon
	mounted bool
	wrapper []string // a command that runs doppel mount, e.g. setpriv to drop capabilities
	flags   []string // more doppel mount flags, e.g. --dedup background
}

// newVolume inits a volume with the given extra init flags and mounts it.
// A cleanup unmounts it and makes sure no daemon outlives the test.
func newVolume(t testing.TB, initArgs ...string) *volume {
	t.Helper()
	requireDoppel(t)
	return newVolumeAt(t, realTempDir(t), initArgs...)
}

// newVolumeAt is newVolume with the store in the given directory.
func newVolumeAt(t testing.TB, store string, initArgs ...string) *volume {
	t.Helper()
	requireDoppel(t)
	logDir := t.TempDir()
	v := &volume{
		Store:   store,
		Mnt:     realTempDir(t),
		logPath: filepath.Join(logDir, "doppel.log"),
	}
	t.Cleanup(func() { v.cleanup(t) })
	initStore(t, v.Store, initArgs...)
	v.mount(t)
	return v
}

// initStore runs doppel init for a volume of the matrix's kind in store,
// unless the test picks where the metadata lives itself (a test of shared
// volumes on a server of its own).
func initStore(t testing.TB, store string, initArgs ...string) {
	t.Helper()
	args := append([]string{"init", "--store", store}, initArgs...)
	if !slices.Contains(initArgs, "--meta") && !slices.Contains(initArgs, "--meta-file") {
		if u := voltest.MetaURL(); u != "" {
			args = append(args, "--meta", u)
		}
		if u := voltest.DataURL(); u != "" {
			args = append(args, "--data", u)
			if n := voltest.CacheBytes(); n > 0 {
				args = append(args, "--cache-size", strconv.FormatInt(n, 10))
			}
		}
	}
	if out, err := runDoppel(time.Minute, args...); err != nil {
		t.Fatalf("doppel %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// needSegmentFiles skips the rest of a test that damages segment files
// when the volumes keep their chunk data in S3 (DOPPEL_TEST_META=
// postgres+s3): there are none.
func needSegmentFiles(t testing.TB) {
	t.Helper()
	if voltest.S3() {
		t.Skip("damages segment files; the volume's chunk data is in S3")
	}
}

// realTempDir is t.TempDir with symlinks resolved, so that the path matches
// /proc/self/mountinfo and daemon command lines.
func realTempDir(t testing.TB) string {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// path joins elem onto the mountpoint.
func (v *volume) path(elem ...string) string {
	return filepath.Join(append([]string{v.Mnt}, elem...)...)
}

func (v *volume) mount(t testing.TB) {
	t.Helper()
	log, err := os.OpenFile(v.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A file rather than a pipe as output: the daemon inherits it, and a
	// pipe would keep Wait blocked for as long as the daemon lives.
	args := append(append(append([]string{}, v.wrapper...), doppelBin, "mount", "--store", v.Store), append(v.flags, v.Mnt)...)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		t.Fatalf("doppel mount: %v\n%s", err, v.logTail())
	}
	if !isMounted(v.Mnt) {
		t.Fatalf("doppel mount returned but %s is not mounted\n%s", v.Mnt, v.logTail())
	}
	v.mounted = true
}

// umount unmounts with doppel umount and checks that the mount and the
// daemon are gone, as the contract promises.
func (v *volume) umount(t testing.TB) {
	t.Helper()
	out, err := runDoppel(2*time.Minute, "umount", v.Mnt)
	if err != nil {
		t.Fatalf("doppel umount: %v\n%s\n%s", err, out, v.logTail())
	}
	v.mounted = false
	if isMounted(v.Mnt) {
		t.Fatalf("doppel umount returned but %s is still mounted", v.Mnt)
	}
	if pids := daemonPIDs(v.Mnt); len(pids) > 0 {
		t.Fatalf("doppel umount returned but daemon(s) %v are still running", pids)
	}
}

// remount unmounts and mounts again, to check what persisted.
func (v *volume) remount(t testing.TB) {
	t.Helper()
	v.umount(t)
	v.mount(t)
}

// cleanup tears the volume down however broken it is: doppel umount,
// then a lazy fusermount3 unmount, then killing leftover daemons.
func (v *volume) cleanup(t testing.TB) {
	if isMounted(v.Mnt) {
		if out, err := runDoppel(time.Minute, "umount", v.Mnt); err != nil {
			t.Logf("cleanup: doppel umount: %v\n%s", err, out)
		}
	}
	if isMounted(v.Mnt) {
		out, err := exec.Command("fusermount3", "-uz", v.Mnt).CombinedOutput()
		t.Logf("cleanup: fusermount3 -uz %s: %v %s", v.Mnt, err, out)
	}
	killDaemons(t, v.Mnt)
	if t.Failed() {
		t.Logf("doppel log (tail):\n%s", v.logTail())
	}
}

// logTail returns the last lines of the mount command's output and of
// the daemon's log (STORE/daemon.log).
func (v *volume) logTail() string {
	var out []string
	for _, p := range []string{v.logPath, filepath.Join(v.Store, "daemon.log")} {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > 60 {
			lines = lines[len(lines)-60:]
		}
		out = append(out, "== "+p, strings.Join(lines, "\n"))
	}
	return strings.Join(out, "\n")
}

// dfStats is the output of doppel df --json.
type dfStats struct {
	LogicalBytes  int64   `json:"logical_bytes"`
	PhysicalBytes int64   `json:"physical_bytes"`
	Chunks        int64   `json:"chunks"`
	DedupRatio    float64 `json:"dedup_ratio"`
	Raw           map[string]any
}

// df runs doppel df --json on the mountpoint, or on the store when the
// volume is not mounted.
func (v *volume) df(t testing.TB) dfStats {
	t.Helper()
	args := []string{"df", "--json", v.Mnt}
	if !v.mounted {
		args = []string{"df", "--json", "--store", v.Store}
	}
	out, err := runDoppel(time.Minute, args...)
	if err != nil {
		t.Fatalf("doppel %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var st dfStats
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("doppel df output is not the expected JSON: %v\n%s", err, out)
	}
	if err := json.Unmarshal(out, &st.Raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"logical_bytes", "physical_bytes", "chunks", "dedup_ratio"} {
		if _, ok := st.Raw[k]; !ok {
			t.Fatalf("doppel df output lacks %q:\n%s", k, out)
		}
	}
	return st
}

// runDoppel runs a short-lived doppel command and returns its stdout, or
// stdout and stderr together when it fails.
func runDoppel(timeout time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, doppelBin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second // in case a child keeps the pipes open
	err := cmd.Run()
	if err != nil {
		return append(stdout.Bytes(), stderr.Bytes()...), err
	}
	return stdout.Bytes(), nil
}

// isMounted reports whether mnt is a mountpoint in our mount namespace.
func isMounted(mnt string) bool {
	_, ok, err := mountinfo.Find(mnt)
	return err == nil && ok
}

// daemonPIDs lists processes other than this one whose command line
// mentions mnt: the daemon serving it.
func daemonPIDs(mnt string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		var pid int
		if _, err := fmt.Sscanf(p, "/proc/%d/cmdline", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if mentionsPath(string(b), mnt) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// mentionsPath reports whether cmdline contains path as a whole path
// (not as a prefix of a longer name such as path+"0").
func mentionsPath(cmdline, path string) bool {
	for i := 0; ; {
		j := strings.Index(cmdline[i:], path)
		if j < 0 {
			return false
		}
		end := i + j + len(path)
		if end == len(cmdline) || cmdline[end] == 0 || cmdline[end] == '/' {
			return true
		}
		i = i + j + 1
	}
}

// killDaemons terminates leftover daemons of mnt, politely first.
func killDaemons(t testing.TB, mnt string) {
	pids := daemonPIDs(mnt)
	if len(pids) == 0 {
		return
	}
	t.Logf("cleanup: daemon(s) %v for %s still running; killing", pids, mnt)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if len(daemonPIDs(mnt)) == 0 {
			return
		}
	}
	for _, pid := range daemonPIDs(mnt) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// storeSpace is the disk space a store directory uses.
type storeSpace struct {
	Data         int64 // allocated to chunk data: everything but Pebble's files
	Meta         int64 // allocated to Pebble's files (directories holding a MANIFEST)
	MetaApparent int64 // their st_size: less than Meta by what is preallocated
}

// storeUsage sums st_blocks*512 over the files under dir, like du.
func storeUsage(t testing.TB, dir string) storeSpace {
	t.Helper()
	pebbleDirs := map[string]bool{}
	alloc := map[string]int64{} // per directory
	apparent := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if errors.Is(err, os.ErrNotExist) {
			return nil // deleted meanwhile (a cache file of a deleted pack)
		}
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasPrefix(d.Name(), "MANIFEST") {
			pebbleDirs[filepath.Dir(p)] = true
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); errors.Is(err, unix.ENOENT) {
			return nil
		} else if err != nil {
			return err
		}
		alloc[filepath.Dir(p)] += st.Blocks * 512
		apparent[filepath.Dir(p)] += st.Size
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var s storeSpace
	for d, n := range alloc {
		if pebbleDirs[d] {
			s.Meta += n
			s.MetaApparent += apparent[d]
		} else {
			s.Data += n
		}
	}
	return s
}
