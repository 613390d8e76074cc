// Command doppel creates, mounts and inspects doppel volumes: copy-on-write,
// deduplicating file systems in user space.
//
// This is the front command. It answers `doppel clone` and `doppel
// snapshot` on a mounted volume itself, through the daemon's control
// socket, and hands every other command to doppel-core, which it finds
// beside itself (or at $DOPPEL_CORE). It links nothing but the standard
// library and the control protocol: a Go program that links the storage
// engine spends about 8 ms initializing packages before main runs, more
// than a clone takes end to end.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "clone", "snapshot":
			if code, ok := fastClone(os.Args[1], os.Args[2:]); ok {
				os.Exit(code)
			}
		}
	}
	execCore()
}

// execCore replaces this process with doppel-core, same arguments.
func execCore() {
	core, err := corePath()
	if err == nil {
		err = syscall.Exec(core, append([]string{"doppel"}, os.Args[1:]...), os.Environ())
		err = fmt.Errorf("doppel hands this command to %s, which failed to start: %w", core, err)
	}
	fmt.Fprintf(os.Stderr, "doppel: %v\n", err)
	os.Exit(1)
}

// corePath is $DOPPEL_CORE, or doppel-core in this program's directory.
func corePath() (string, error) {
	if p := os.Getenv("DOPPEL_CORE"); p != "" {
		return p, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	core := filepath.Join(filepath.Dir(self), "doppel-core")
	if _, err := os.Stat(core); err != nil {
		return "", fmt.Errorf("%s is missing: doppel hands its commands to it (build both with `make build`, or `go install ./cmd/...`): %w", core, err)
	}
	return core, nil
}
