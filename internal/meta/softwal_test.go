package meta_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/meta/storetest"
)

// TestCommitSurvivesKill commits in a child process that then kills itself
// without closing the store: every commit that returned must be there.
func TestCommitSurvivesKill(t *testing.T) {
	if dir := os.Getenv("DOPPEL_META_KILL_DIR"); dir != "" {
		p, err := meta.OpenPebble(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for i := range 100 {
			storetest.Commit(t, p, map[string][]byte{fmt.Sprintf("k%03d", i): []byte("v")})
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCommitSurvivesKill$")
	cmd.Env = append(os.Environ(), "DOPPEL_META_KILL_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("child did not die by signal: %v\n%s", err, out)
	}
	p := openT(t, dir)
	defer p.Close()
	for i := range 100 {
		storetest.WantValue(t, p, fmt.Sprintf("k%03d", i), "v")
	}
}

// TestSyncSurvivesPowerLoss drops everything not synced (Pebble's strict
// in-memory file system) and checks that Sync and Commit(true) made their
// batches durable, across several log rotations.
func TestSyncSurvivesPowerLoss(t *testing.T) {
	fs := vfs.NewStrictMem()
	if err := fs.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	syncDir(t, fs)
	p, err := meta.OpenPebbleFS("/db", fs)
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 64<<10) // 4 MiB memtables rotate every ~60 batches
	n := 0
	for round := range 5 {
		for range 50 {
			storetest.Commit(t, p, map[string][]byte{fmt.Sprintf("k%05d", n): big})
			n++
		}
		if round%2 == 0 {
			if err := p.Sync(); err != nil {
				t.Fatal(err)
			}
		} else {
			b := p.NewBatch()
			b.Set(fmt.Appendf(nil, "k%05d", n), big)
			if err := b.Commit(true); err != nil {
				t.Fatal(err)
			}
			b.Close()
			n++
		}
	}
	durable := n
	for range 30 { // never synced: may or may not survive
		storetest.Commit(t, p, map[string][]byte{fmt.Sprintf("k%05d", n): big})
		n++
	}
	fs.SetIgnoreSyncs(true)
	p.Close()
	fs.ResetToSyncedState()
	fs.SetIgnoreSyncs(false)

	p, err = meta.OpenPebbleFS("/db", fs)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range durable {
		if _, err := p.Get(fmt.Appendf(nil, "k%05d", i)); err != nil {
			t.Fatalf("synced key %d of %d lost: %v", i, durable, err)
		}
	}
}

func syncDir(t *testing.T, fs vfs.FS) {
	t.Helper()
	d, err := fs.OpenDir("/")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	d.Close()
}

// TestLogReservesLittleAhead checks the cap on the write-ahead log's
// preallocation: an idle store with a few commits must not hold the 18 MiB
// that Pebble reserves ahead for a 16 MiB memtable.
func TestLogReservesLittleAhead(t *testing.T) {
	dir := t.TempDir()
	p := openT(t, dir)
	defer p.Close()
	storetest.Commit(t, p, map[string][]byte{"k": []byte("v")})
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no write-ahead log in %s (%v)", dir, err)
	}
	var allocated int64
	for _, name := range logs {
		var st syscall.Stat_t
		if err := syscall.Stat(name, &st); err != nil {
			t.Fatal(err)
		}
		allocated += st.Blocks * 512
	}
	if limit := int64(5 << 20); allocated > limit {
		t.Errorf("write-ahead logs %v hold %d bytes on disk, want at most %d", logs, allocated, limit)
	}
}
