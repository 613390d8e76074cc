package tests

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMountSetsKernelReadahead: the daemon sets its mount's kernel
// readahead to one 1 MiB request (volume.KernelReadahead), on every kind
// of volume; FUSE's own default is 128 KiB.
func TestMountSetsKernelReadahead(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("read_ahead_kb can only be set as root")
	}
	v := newVolume(t)
	var st unix.Stat_t
	if err := unix.Stat(v.Mnt, &st); err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", unix.Major(st.Dev), unix.Minor(st.Dev))
	var got string
	// The daemon sets it right after the mount appears, perhaps after
	// doppel mount returned.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got = strings.TrimSpace(string(b)); got == "1024" || time.Now().After(deadline) {
			break
		}
	}
	if got != "1024" {
		t.Fatalf("%s is %s KiB, want 1024\n%s", path, got, v.logTail())
	}
}
