package tests

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/testutil"
)

const MiB = 1 << 20

// TestDedup writes the same 32 MiB of random data several ways and checks
// that only the first copy costs physical space, then that deleting
// everything gives the space back, in doppel's accounting and on disk.
func TestDedup(t *testing.T) {
	v := newVolume(t, "--chunking", "cdc")
	baseUse := storeUsage(t, v.Store)
	base := v.df(t)
	data := testutil.SeededBytes(1, 32*MiB)
	other := testutil.SeededBytes(2, 1*MiB)
	slack := int64(len(data)) / 20 // 5%: chunks cut differently near the edges

	// step writes a file and checks physical and logical growth.
	step := func(name string, content []byte, minGrowth, maxGrowth int64) {
		t.Helper()
		before := v.df(t)
		writeFileSync(t, v.path(name), content)
		after := v.df(t)
		growth := after.PhysicalBytes - before.PhysicalBytes
		t.Logf("%s: physical +%d bytes (allowed %d..%d), chunks %d -> %d", name, growth, minGrowth, maxGrowth, before.Chunks, after.Chunks)
		if growth < minGrowth || growth > maxGrowth {
			t.Errorf("%s: physical_bytes grew by %d, want %d..%d", name, growth, minGrowth, maxGrowth)
		}
		if lg := after.LogicalBytes - before.LogicalBytes; lg != int64(len(content)) {
			t.Errorf("%s: logical_bytes grew by %d, want the file size %d", name, lg, len(content))
		}
		checkFile(t, v.path(name), content)
	}
	n := int64(len(data))
	step("original", data, n-slack, n+n/10) // random data does not compress
	step("identical", data, 0, slack)
	step("at-offset", concat(other, data), int64(len(other)), int64(len(other))+slack)
	step("shifted", concat([]byte{7, 8, 9}, data), 0, slack)

	// coreutils cp uses copy_file_range; whether doppel shares extents or
	// re-chunks the copy, it must not store anything new.
	before := v.df(t)
	if out, err := exec.Command("cp", v.path("original"), v.path("cp-copy")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	fsyncPath(t, v.path("cp-copy"))
	after := v.df(t)
	if g := after.PhysicalBytes - before.PhysicalBytes; g != 0 {
		t.Errorf("cp of a 32 MiB file grew physical_bytes by %d, want 0", g)
	}
	checkFile(t, v.path("cp-copy"), data)
	if after.DedupRatio < 3 {
		t.Errorf("dedup_ratio = %v with six copies of the same data, want >= 3 (df: %v)", after.DedupRatio, after.Raw)
	}

	// Shared chunks, refcounts and stats must be consistent on disk.
	v.umount(t)
	v.fsck(t)
	v.mount(t)

	// Deleting everything must free every chunk, and the segment files'
	// disk space (by hole punching or deletion) shortly after.
	for _, name := range []string{"original", "identical", "at-offset", "shifted", "cp-copy"} {
		if err := os.Remove(v.path(name)); err != nil {
			t.Fatal(err)
		}
	}
	syncfsPath(t, v.Mnt)
	var st dfStats
	var use storeSpace
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		st, use = v.df(t), storeUsage(t, v.Store)
		if st.PhysicalBytes == 0 && use.Data <= baseUse.Data+MiB || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("after deleting: df %v; store %+v (baseline %+v)", st.Raw, use, baseUse)
	if st.PhysicalBytes != 0 || st.Chunks != 0 || st.LogicalBytes != 0 {
		t.Errorf("after deleting everything df reports physical=%d chunks=%d logical=%d, want 0/0/0 (empty volume: %v)",
			st.PhysicalBytes, st.Chunks, st.LogicalBytes, base.Raw)
	}
	if use.Data > baseUse.Data+MiB {
		t.Errorf("store data still uses %d bytes after deleting everything, baseline %d (+1 MiB allowed)", use.Data, baseUse.Data)
	}
	// Metadata grows with what was written (Pebble's WAL and memtables);
	// allow it some room, but far less than the ~130 MiB of file data.
	if use.Meta > baseUse.Meta+16*MiB {
		t.Errorf("store metadata (Pebble) occupies %d bytes on disk after deleting everything, baseline %d (+16 MiB allowed); "+
			"the apparent size of its files is %d bytes", use.Meta, baseUse.Meta, use.MetaApparent)
	}
	v.umount(t)
	v.fsck(t)
}

// TestZeroData checks that zeros cost no chunk data, whether written
// explicitly, left as a hole, or embedded in other data.
func TestZeroData(t *testing.T) {
	v := newVolume(t)
	zeros := make([]byte, 16*MiB)

	before := v.df(t)
	writeFileSync(t, v.path("zeros"), zeros)
	if g := v.df(t).PhysicalBytes - before.PhysicalBytes; g != 0 {
		t.Errorf("writing 16 MiB of zeros grew physical_bytes by %d, want 0", g)
	}
	checkFile(t, v.path("zeros"), zeros)

	before = v.df(t)
	if err := os.Truncate(v.path("zeros"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(v.path("sparse"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(v.path("sparse"), 16*MiB); err != nil {
		t.Fatal(err)
	}
	fsyncPath(t, v.path("sparse"))
	if g := v.df(t).PhysicalBytes - before.PhysicalBytes; g != 0 {
		t.Errorf("a 16 MiB sparse file grew physical_bytes by %d, want 0", g)
	}
	checkFile(t, v.path("sparse"), zeros)

	// 8 MiB of zeros between 1 MiB random runs: at most the random data
	// plus the chunks straddling the boundaries (256 KiB each by default).
	before = v.df(t)
	a, b := testutil.SeededBytes(3, MiB), testutil.SeededBytes(4, MiB)
	mixed := concat(a, zeros[:8*MiB], b)
	writeFileSync(t, v.path("mixed"), mixed)
	if g := v.df(t).PhysicalBytes - before.PhysicalBytes; g > 3*MiB {
		t.Errorf("1 MiB random + 8 MiB zeros + 1 MiB random grew physical_bytes by %d, want <= 3 MiB", g)
	}
	checkFile(t, v.path("mixed"), mixed)
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// writeFileSync writes a file and fsyncs it, so that doppel has chunked
// and stored the data before it is measured.
func writeFileSync(t testing.TB, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close %s: %v", path, err)
	}
}

func fsyncPath(t testing.TB, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync %s: %v", path, err)
	}
}

func syncfsPath(t testing.TB, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		t.Fatalf("syncfs %s: %v", path, err)
	}
}

// checkFile requires path to hold exactly want.
func checkFile(t testing.TB, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffBytes(want, got); d != "" {
		t.Errorf("%s: content differs from what was written: %s", path, d)
	}
}
