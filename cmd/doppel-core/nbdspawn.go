package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// spawnNBD runs `doppel nbd` without -d in its own session, its output in
// STORE/nbd.log, and returns once it serves (printing where) or failed.
func spawnNBD(store string, args []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var childArgs []string
	for _, a := range args {
		switch a {
		case "-d", "--d", "-d=true", "--d=true":
			continue
		}
		childArgs = append(childArgs, a)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	logPath := filepath.Join(store, "nbd.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(self, append([]string{"nbd", "--notify-fd", "3"}, childArgs...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the server: %w", err)
	}
	w.Close()
	go cmd.Wait()
	result := make(chan error, 1)
	go func() {
		var text strings.Builder
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "ready":
				fmt.Print(text.String())
				fmt.Printf("doppel nbd: running in the background as process %d (stop it with kill %d; log: %s)\n", cmd.Process.Pid, cmd.Process.Pid, logPath)
				result <- nil
				return
			case strings.HasPrefix(line, "error: "):
				result <- errors.New(strings.TrimPrefix(line, "error: "))
				return
			}
			text.WriteString(line + "\n")
		}
		result <- errors.New("the server exited before serving; see " + logPath)
	}()
	select {
	case err := <-result:
		return err
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		return errors.New("the server did not start within 60 s; see " + logPath)
	}
}
