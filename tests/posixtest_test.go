package tests

import (
	"os"
	"slices"
	"testing"

	"github.com/hanwen/go-fuse/v2/posixtest"

	"github.com/doppelfs/doppel/internal/testutil"
)

// notPOSIX are posixtest's tests that fail on the host's own file system
// too, because they check go-fuse's loopback rather than POSIX.
var notPOSIX = map[string]string{
	// A process's own POSIX record locks never conflict (ext4 and tmpfs
	// grant the second lock); go-fuse's loopback takes OFD locks.
	"FcntlFlockLocksFile": "expects a process's second lock on a file to conflict with its first",
}

// TestGoFusePosixSuite runs go-fuse's ready-made POSIX suite (posixtest.All)
// against a doppel mount, each test in a fresh directory of one volume.
func TestGoFusePosixSuite(t *testing.T) {
	v := newVolume(t)
	for _, name := range slices.Sorted(mapKeys(posixtest.All)) {
		t.Run(name, func(t *testing.T) {
			if why := notPOSIX[name]; why != "" {
				t.Skip("not POSIX: " + why)
			}
			dir := v.path(name)
			testutil.Check(t, os.Mkdir(dir, 0o755))
			posixtest.All[name](t, dir)
		})
	}
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
