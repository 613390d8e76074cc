package meta

import (
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// TestLogWriteFailureStopsTheStore fills the disk under Pebble's log: the
// commit gets an error wrapping ErrFailed and ENOSPC instead of a panic,
// later writes fail at once instead of hanging, and reads go on.
func TestLogWriteFailureStopsTheStore(t *testing.T) {
	var full atomic.Bool
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if full.Load() && strings.HasSuffix(path, ".log") && op.OpKind() == errorfs.OpKindWrite {
			return syscall.ENOSPC
		}
		return nil
	}))
	p, err := OpenPebbleFS(t.TempDir(), fs)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(key string, sync bool) error {
		b := p.NewBatch()
		defer b.Close()
		if err := b.Set([]byte(key), []byte("v")); err != nil {
			return err
		}
		return b.Commit(sync)
	}
	if err := commit("before", true); err != nil {
		t.Fatal(err)
	}
	full.Store(true)
	err = commit("during", true)
	if !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("commit on a full disk: err = %v, want ErrFailed wrapping ENOSPC", err)
	}
	full.Store(false) // space comes back, but this Pebble cannot go on
	if err := commit("after", false); !errors.Is(err, ErrFailed) || errors.Is(err, syscall.ENOSPC) {
		t.Errorf("commit after the failure: err = %v, want ErrFailed, not ENOSPC (space is back)", err)
	}
	if err := p.Sync(); !errors.Is(err, ErrFailed) {
		t.Errorf("sync after the failure: err = %v, want ErrFailed", err)
	}
	if v, err := p.Get([]byte("before")); err != nil || string(v) != "v" {
		t.Errorf("read after the failure: %q, %v", v, err)
	}
	p.DiskUsage() // must not hang
	if err := p.Close(); !errors.Is(err, ErrFailed) {
		t.Errorf("close after the failure: err = %v, want ErrFailed", err)
	}
}
