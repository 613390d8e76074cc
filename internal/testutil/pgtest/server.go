package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// initdb creates the cluster in s.Dir/data, owned by owner (-1: us).
func (s *Server) initdb(bin string, cred *syscall.Credential, owner int) error {
	pwfile := filepath.Join(s.Dir, "pw")
	if err := os.WriteFile(pwfile, []byte(s.Password+"\n"), 0o600); err != nil {
		return err
	}
	defer os.Remove(pwfile)
	if owner >= 0 {
		for _, p := range []string{s.Dir, pwfile} {
			if err := os.Chown(p, owner, -1); err != nil {
				return err
			}
		}
	}
	cmd := exec.Command(filepath.Join(bin, "initdb"),
		"-D", filepath.Join(s.Dir, "data"), "-U", s.User, "--pwfile", pwfile,
		"--auth-host=scram-sha-256", "--auth-local=trust",
		"-E", "UTF8", "--no-locale", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = s.Dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	return nil
}

// start runs the postmaster and waits until it accepts a connection with
// the password, or exits (a port someone else took).
func (s *Server) start() error {
	bin, cred, o := s.bin, s.cred, s.opts
	logf, err := os.OpenFile(filepath.Join(s.Dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own descriptor
	args := []string{"-D", filepath.Join(s.Dir, "data"), "-p", strconv.Itoa(s.Port),
		"-k", s.Dir, "-c", "listen_addresses=127.0.0.1",
		"-c", "shared_buffers=32MB", "-c", "max_connections=50"}
	if !o.Fsync {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	for _, kv := range o.Settings {
		args = append(args, "-c", kv)
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = s.Dir
	// If the test binary dies without cleaning up, the server follows it
	// (SIGQUIT: immediate shutdown, which takes the backends along).
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited

	deadline := time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err == nil {
			c.Close(ctx)
			cancel()
			return nil
		}
		cancel()
		select {
		case <-exited:
			return fmt.Errorf("postgres exited: %v", cmd.ProcessState)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return fmt.Errorf("postgres did not accept connections: %w", err)
		}
	}
}

// crash shuts the server down at once (immediate shutdown, then kill).
func (s *Server) crash() { s.stopWith(syscall.SIGQUIT, syscall.SIGKILL) }

// stop shuts the server down (fast shutdown, then immediate, then kill).
func (s *Server) stop() { s.stopWith(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGKILL) }

// stopWith sends the signals in turn, each given 30 s to end the server.
func (s *Server) stopWith(sigs ...syscall.Signal) {
	if s.cmd == nil {
		return
	}
	for _, sig := range sigs {
		if err := s.cmd.Process.Signal(sig); errors.Is(err, os.ErrProcessDone) {
			break
		}
		select {
		case <-s.exited:
			s.cmd = nil
			return
		case <-time.After(30 * time.Second):
		}
	}
	<-s.exited
	s.cmd = nil
}
