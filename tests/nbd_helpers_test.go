package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// requireNBDTools skips t unless the binary built and the NBD clients the
// tests drive are installed (scripts/ensure-deps.sh installs them).
func requireNBDTools(t testing.TB, tools ...string) {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	for _, tool := range append([]string{"nbdinfo", "qemu-io"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (scripts/ensure-deps.sh installs libnbd-bin and qemu-utils)", tool)
		}
	}
}

// newStore inits a volume of the matrix's kind that is not mounted.
func newStore(t testing.TB, initArgs ...string) string {
	t.Helper()
	store := realTempDir(t)
	initStore(t, store, initArgs...)
	return store
}

// nbdServer is a `doppel nbd` process in the foreground.
type nbdServer struct {
	cmd    *exec.Cmd
	Listen string // unix:PATH or tcp:HOST:PORT, as it printed
	mu     sync.Mutex
	out    bytes.Buffer
	exited chan struct{}
	err    error
}

// startNBD runs `doppel nbd ARGS` and returns once it serves. A cleanup
// stops it (SIGINT) if the test did not.
func startNBD(t testing.TB, args ...string) *nbdServer {
	t.Helper()
	s := &nbdServer{exited: make(chan struct{})}
	s.cmd = exec.Command(doppelBin, append([]string{"nbd"}, args...)...)
	pr, pw := io.Pipe()
	s.cmd.Stdout, s.cmd.Stderr = pw, &lockedWriter{&s.mu, &s.out}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listen := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.out.WriteString(line + "\n")
			s.mu.Unlock()
			if l, ok := strings.CutPrefix(line, "doppel nbd: serving on "); ok {
				listen <- strings.Fields(l)[0]
			}
		}
	}()
	go func() {
		s.err = s.cmd.Wait()
		pw.Close()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.Stop(t)
	})
	select {
	case s.Listen = <-listen:
		return s
	case <-s.exited:
		t.Fatalf("doppel nbd %s exited before serving: %v\n%s", strings.Join(args, " "), s.err, s.output())
	case <-time.After(time.Minute):
		s.cmd.Process.Kill()
		t.Fatalf("doppel nbd %s did not serve within a minute\n%s", strings.Join(args, " "), s.output())
	}
	return nil
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (s *nbdServer) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// Stop sends SIGINT and fails t unless the server flushes and exits
// cleanly.
func (s *nbdServer) Stop(t testing.TB) {
	t.Helper()
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		s.cmd.Process.Kill()
		<-s.exited
		t.Errorf("doppel nbd did not stop within a minute of SIGINT\n%s", s.output())
		return
	}
	if s.err != nil {
		t.Errorf("doppel nbd exited with %v\n%s", s.err, s.output())
	}
}

// Kill ends the server with SIGKILL.
func (s *nbdServer) Kill() {
	s.cmd.Process.Kill()
	<-s.exited
}

// URI is the NBD URI of export name.
func (s *nbdServer) URI(name string) string {
	if p, ok := strings.CutPrefix(s.Listen, "unix:"); ok {
		return "nbd+unix:///" + url.PathEscape(name) + "?socket=" + p
	}
	return "nbd://" + strings.TrimPrefix(s.Listen, "tcp:") + "/" + url.PathEscape(name)
}

// runClient runs an NBD client tool and returns its output, failing t if
// it fails or reports a failure (qemu-io exits 0 after a failed pattern
// check).
func runClient(t testing.TB, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil || bytes.Contains(bytes.ToLower(out), []byte("fail")) {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// qemuIO runs qemu-io commands on a raw NBD export.
func qemuIO(t testing.TB, uri string, cmds ...string) string {
	t.Helper()
	return qemuIOFlags(t, []string{"-f", "raw"}, uri, cmds...)
}

// qemuIORead runs qemu-io commands on a read-only export.
func qemuIORead(t testing.TB, uri string, cmds ...string) string {
	t.Helper()
	return qemuIOFlags(t, []string{"-r", "-f", "raw"}, uri, cmds...)
}

func qemuIOFlags(t testing.TB, args []string, uri string, cmds ...string) string {
	t.Helper()
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	return runClient(t, "qemu-io", append(args, uri)...)
}

// mapExtent is one line of nbdinfo --map.
type mapExtent struct {
	Off, Len int64
	Hole     bool
}

// nbdMap is nbdinfo --map of an export, neighbours of one kind merged.
func nbdMap(t testing.TB, uri string) []mapExtent {
	t.Helper()
	var out []mapExtent
	for _, line := range strings.Split(strings.TrimSpace(runClient(t, "nbdinfo", "--map", uri)), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			t.Fatalf("nbdinfo --map line %q", line)
		}
		off, _ := strconv.ParseInt(f[0], 10, 64)
		n, _ := strconv.ParseInt(f[1], 10, 64)
		typ, _ := strconv.Atoi(f[2])
		hole := typ&1 != 0
		if k := len(out); k > 0 && out[k-1].Hole == hole {
			out[k-1].Len += n
			continue
		}
		out = append(out, mapExtent{Off: off, Len: n, Hole: hole})
	}
	return out
}

// exportSize is the size nbdinfo reports.
func exportSize(t testing.TB, uri string) int64 {
	t.Helper()
	out := strings.TrimSpace(runClient(t, "nbdinfo", "--size", uri))
	n, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		t.Fatalf("nbdinfo --size: %q", out)
	}
	return n
}

// storeDF is doppel df --json of a store, mounted or not.
func storeDF(t testing.TB, store string) map[string]int64 {
	t.Helper()
	out, err := runDoppel(time.Minute, "df", "--json", "--store", store)
	if err != nil {
		t.Fatalf("doppel df: %v\n%s", err, out)
	}
	var raw map[string]any
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	m := map[string]int64{}
	for k, v := range raw {
		if f, ok := v.(float64); ok {
			m[k] = int64(f)
		}
	}
	return m
}

// writeTemp writes data to a new host file and returns its path.
func writeTemp(t testing.TB, data []byte) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "img")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}
