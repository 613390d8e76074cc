package s3test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// Test credentials of every server Start runs.
const (
	AccessKey = "doppeltest"
	SecretKey = "doppel-test-secret-key"
	Region    = "us-east-1"
)

// Server is a running versitygw.
type Server struct {
	Endpoint string // http://127.0.0.1:PORT
	Bucket   string // created by Start
	Root     string // the directory its posix backend serves

	bin  string
	addr string
	mu   sync.Mutex
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan struct{}
}

// Start starts a server with one bucket and stops it when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := binary()
	if bin == "" {
		msg := "versitygw not found: run scripts/ensure-versitygw.sh (or set DOPPEL_VERSITYGW)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	s := &Server{bin: bin, Root: t.TempDir(), Bucket: "doppel-test"}
	t.Cleanup(s.Stop)
	if err := s.startOnFreePort(); err != nil {
		t.Fatalf("s3test: start versitygw: %v", err)
	}
	if err := s.CreateBucket(s.Bucket); err != nil {
		t.Fatalf("s3test: %v", err)
	}
	return s
}

// StartShared starts a server with one bucket for a whole test binary
// (TestMain), where no testing.TB exists: the caller runs stop after the
// tests, whatever their outcome (Pdeathsig stops the server if the
// binary dies first). ErrNotInstalled when the binary is missing.
func StartShared() (s *Server, stop func(), err error) {
	bin := binary()
	if bin == "" {
		return nil, nil, ErrNotInstalled
	}
	root, err := os.MkdirTemp("", "s3test-")
	if err != nil {
		return nil, nil, err
	}
	s = &Server{bin: bin, Root: root, Bucket: "doppel-test"}
	stop = func() { s.Stop(); os.RemoveAll(root) }
	if err = s.startOnFreePort(); err == nil {
		err = s.CreateBucket(s.Bucket)
	}
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("s3test: start versitygw: %w", err)
	}
	return s, stop, nil
}

// ErrNotInstalled is StartShared's error when versitygw is not built.
var ErrNotInstalled = errors.New("versitygw not found: run scripts/ensure-versitygw.sh (or set DOPPEL_VERSITYGW)")

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start runs versitygw on s.addr and waits until it answers HTTP.
func (s *Server) start() error {
	// --keep-alive: without it versitygw answers every request with
	// "Connection: close", so each PUT and GET dials anew, which no S3
	// service a user runs does.
	cmd := exec.Command(s.bin, "--port", s.addr, "--quiet", "--keep-alive", "posix", s.Root)
	// The credentials go through the environment, not the command line.
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+AccessKey, "ROOT_SECRET_KEY="+SecretKey)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.out, s.done = cmd, out, done
	s.mu.Unlock()
	client := &http.Client{Timeout: time.Second}
	for range 300 { // up to about 30 s on a loaded machine
		select {
		case <-done:
			return fmt.Errorf("versitygw exited: %s", out.String())
		default:
		}
		if resp, err := client.Get(s.Endpoint + "/"); err == nil {
			resp.Body.Close()
			return nil // any answer (403 without credentials) means it serves
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.Stop()
	return fmt.Errorf("versitygw on %s did not answer", s.addr)
}

// Stop stops the server (SIGTERM, then SIGKILL) and waits for it; the
// directory it served stays. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// Restart starts a stopped server again on the same address and directory.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatalf("s3test: restart versitygw: %v", err)
	}
}

// startOnFreePort starts the server on a free port of 127.0.0.1, trying
// again when another process takes the port first.
func (s *Server) startOnFreePort() error {
	var err error
	for range 5 {
		var port int
		if port, err = freePort(); err != nil {
			return err
		}
		s.addr = fmt.Sprintf("127.0.0.1:%d", port)
		s.Endpoint = "http://" + s.addr
		if err = s.start(); err == nil {
			return nil
		}
	}
	return err
}

// CPUSeconds is the CPU time (user and system) the running server has
// used, for benchmarks that report the server's share of a workload; 0
// when it is not running or /proc cannot tell.
func (s *Server) CPUSeconds() float64 {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		return 0
	}
	return testutil.ProcessCPUSeconds(cmd.Process.Pid)
}
