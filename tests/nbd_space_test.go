package tests

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/voltest"
)

// TestNBDSpaceReturn checks purge's three ways through an export: TRIM,
// WRITE_ZEROES (with and without NO_HOLE) and a WRITE of all-zero blocks
// each free their chunks and give their segment space back, as doppel df
// shows, while chunks a clone still shares stay.
func TestNBDSpaceReturn(t *testing.T) {
	requireNBDTools(t, "nbdcopy")
	store := newStore(t)
	srv := startNBD(t, "--store", store, "--create", "40M", "/disk.img")
	uri := srv.URI("disk.img")
	runClient(t, "nbdcopy", writeTemp(t, testutil.SeededBytes(3, 40*mib)), uri)
	before := storeDF(t, store)
	t.Logf("40 MiB written: %v", before)
	if stored(before) != 40*mib/4096 || before["allocated_bytes"] < 40*mib {
		t.Fatalf("40 MiB of distinct data written in 4 KiB blocks: %d chunks and owned blocks, %d bytes allocated", stored(before), before["allocated_bytes"])
	}
	steps := []struct {
		name string
		cmd  string
	}{
		{"TRIM", "discard 0 8M"},
		{"WRITE_ZEROES", "write -z -u 8M 8M"},
		{"WRITE_ZEROES with NO_HOLE", "write -z 16M 8M"},
		{"all-zero WRITE", "write -P 0 24M 8M"},
	}
	last := before
	for _, s := range steps {
		qemuIO(t, uri, s.cmd) // qemu-io flushes before it exits
		// Segment files are punched block by block; a block a segment's
		// header shares with the first chunk may stay.
		want := last["allocated_bytes"] - 8*mib + 64<<10
		start := time.Now()
		now := awaitDF(t, store, func(df map[string]int64) bool { return df["allocated_bytes"] <= want })
		if stored(now) != stored(last)-8*mib/4096 {
			t.Errorf("%s of 8 MiB: chunks and owned blocks %d -> %d, want %d fewer", s.name, stored(last), stored(now), 8*mib/4096)
		}
		t.Logf("%s of 8 MiB: allocated %d -> %d bytes, %v after the client's flush", s.name, last["allocated_bytes"], now["allocated_bytes"], time.Since(start).Round(10*time.Millisecond))
		last = now
	}
	qemuIO(t, uri, "read -P 0 0 32M")

	// The last 8 MiB are shared with a clone: trimming them in the export
	// frees nothing, and the clone keeps its data.
	if out, err := runDoppel(time.Minute, "clone", "--store", store, "/disk.img", "/clone.img"); err != nil {
		t.Fatalf("doppel clone: %v\n%s", err, out)
	}
	qemuIO(t, uri, "discard 32M 8M")
	time.Sleep(2 * time.Second) // a reclaim would have run by now (every 500 ms)
	now := storeDF(t, store)
	if stored(now) != stored(last) || now["allocated_bytes"] < last["allocated_bytes"] {
		t.Errorf("trim of chunks a clone shares: chunks %d -> %d, allocated %d -> %d; want them kept",
			stored(last), stored(now), last["allocated_bytes"], now["allocated_bytes"])
	}
	srv.Stop(t)
	clone := startNBD(t, "--store", store, "--read-only", "/clone.img")
	qemuIORead(t, clone.URI("clone.img"), "read -P 0 0 32M")
	got := filepath.Join(t.TempDir(), "clone.img")
	runClient(t, "nbdcopy", clone.URI("clone.img"), got)
	if b, _ := os.ReadFile(got); len(b) != 40*mib || !bytes.Equal(b[32*mib:], testutil.SeededBytes(3, 40*mib)[32*mib:]) {
		t.Error("the clone lost the data its origin trimmed after the clone")
	}
	clone.Stop(t)
	if out, err := runDoppel(5*time.Minute, "fsck", "--store", store); err != nil {
		t.Fatalf("doppel fsck: %v\n%s", err, out)
	}
}

// awaitDF polls doppel df until ok says yes, for at most 30 s: freed
// chunks are punched out of the segment files by the reclaimer, every
// 500 ms.
func awaitDF(t testing.TB, store string, ok func(map[string]int64) bool) map[string]int64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		df := storeDF(t, store)
		if ok(df) {
			return df
		}
		if time.Now().After(deadline) {
			t.Fatalf("space not back within 30 s: df %v", df)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stored is how many pieces of data doppel df says the volume stores:
// chunks, and disk images' blocks that have no chunk record (owned).
func stored(df map[string]int64) int64 { return df["chunks"] + df["owned_blocks"] }

// TestNBDOwnedBlocksShareInBackground checks the dedup of disk images'
// blocks after the fact: blocks written through an export are owned, not
// looked up in the chunk table, so the same image copied into two
// exports is stored twice at first; the background pass then makes the
// second copy's blocks share the first's, and gives the space back.
func TestNBDOwnedBlocksShareInBackground(t *testing.T) {
	requireNBDTools(t, "nbdcopy")
	skipUnlessOwnedBlocks(t)
	store := newStore(t)
	srv := startNBD(t, "--store", store, "--create", "8M", "/a.img", "/b.img")
	img := writeTemp(t, testutil.SeededBytes(5, 8*mib))
	runClient(t, "nbdcopy", img, srv.URI("a.img"))
	runClient(t, "nbdcopy", img, srv.URI("b.img"))
	first := storeDF(t, store)
	t.Logf("the image in two exports: %v", first)
	if first["owned_blocks"] == 0 {
		t.Fatalf("no owned block after writes through an export: %v", first)
	}
	start := time.Now()
	now := awaitDF(t, store, func(df map[string]int64) bool {
		return df["physical_bytes"] == 8*mib && df["allocated_bytes"] <= 8*mib+64<<10
	})
	t.Logf("after the background pass (%v): %v", time.Since(start).Round(100*time.Millisecond), now)
	for _, name := range []string{"a.img", "b.img"} {
		got := filepath.Join(t.TempDir(), name)
		runClient(t, "nbdcopy", srv.URI(name), got)
		if b, _ := os.ReadFile(got); !bytes.Equal(b, testutil.SeededBytes(5, 8*mib)) {
			t.Errorf("%s reads back other bytes after the pass", name)
		}
	}
	srv.Stop(t)
	(&volume{Store: store}).fsckStrict(t)
}

// skipUnlessOwnedBlocks skips a test of owned blocks on the shared
// volumes DOPPEL_TEST_META makes: their metadata is not local and their
// blocks keep chunk records (docs/BLOCK.md, "Owned blocks").
func skipUnlessOwnedBlocks(t *testing.T) {
	t.Helper()
	if voltest.Postgres() {
		t.Skip("shared volumes keep a chunk record for every block")
	}
}
