package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// xfstestsTool returns the path of one of xfstests' ltp/ programs (fsx,
// fsstress) when DOPPEL_XFSTESTS names a checkout of xfstests
// (git.kernel.org/pub/scm/fs/xfs/xfstests-dev.git), building them there if
// needed (autoconf, libtool, xfslibs-dev, uuid-dev, libattr1-dev,
// libacl1-dev, libaio-dev, liburing-dev; scripts/ensure-deps.sh does not
// install these). Opt-in, as TestPjdfstest: no package registry here
// serves xfstests.
func xfstestsTool(t *testing.T, name string) string {
	t.Helper()
	src := os.Getenv("DOPPEL_XFSTESTS")
	if src == "" {
		t.Skip("DOPPEL_XFSTESTS is not set (a checkout of xfstests)")
	}
	bin := filepath.Join(src, "ltp", name)
	if _, err := os.Stat(bin); err != nil {
		build := exec.Command("sh", "-c", "make configure && ./configure && make -C lib && make -C ltp")
		build.Dir = src
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building xfstests' ltp programs in %s: %v\n%s", src, err, out)
		}
	}
	return bin
}

// runLong runs a long tool and fails t with the end of its output if it
// fails.
func runLong(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
	return string(out)
}

// TestFsx runs fsx, xfstests' file exerciser: random reads, writes
// (through mmap too), truncates, fallocate (punch hole, zero range, keep
// size) and copy_file_range on one file, each read checked against its
// model of the file, with buffered and with direct I/O. fsx turns off
// itself what the kernel's FUSE client refuses (clone, dedupe and exchange
// ranges; collapse, insert and unshare ranges, which namespace.Fallocate
// implements but a mount never receives).
func TestFsx(t *testing.T) {
	fsx := xfstestsTool(t, "fsx")
	v := newVolume(t)
	ops := strconv.Itoa(testutil.EnvInt(t, "DOPPEL_FSX_OPS", 20000))
	for seed, extra := range [][]string{{}, {}, {"-Z"}} {
		args := append([]string{"-q", "-N", ops, "-S", strconv.Itoa(seed + 1), "-l", "4194304", "-o", "262144"}, extra...)
		args = append(args, v.path("fsx"+strconv.Itoa(seed)))
		out := runLong(t, v.Mnt, fsx, args...)
		if !strings.Contains(out, "operations completed A-OK") {
			t.Fatalf("fsx %s:\n%s", strings.Join(args, " "), out)
		}
	}
	v.umount(t)
	v.fsck(t)
}

// TestFsstress runs fsstress, xfstests' namespace and data stress, with
// four processes at once in one directory tree, and then checks the volume
// with fsck.
func TestFsstress(t *testing.T) {
	fsstress := xfstestsTool(t, "fsstress")
	v := newVolume(t)
	dir := v.path("fsstress")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ops := strconv.Itoa(testutil.EnvInt(t, "DOPPEL_FSSTRESS_OPS", 10000))
	runLong(t, v.Mnt, fsstress, "-d", dir, "-n", ops, "-p", "4", "-s", "7")
	v.umount(t)
	v.fsck(t)
}

// TestFsstressClones runs fsstress on a tree and on its clone at the same
// time: the snapshot taken with the clone must not change, the diff the
// change journal drives must list what a full walk of both trees lists,
// and fsck must find the volume clean.
func TestFsstressClones(t *testing.T) {
	fsstress := xfstestsTool(t, "fsstress")
	// The daemon prunes and compacts the journal all along.
	t.Setenv("DOPPEL_JOURNAL", "keep=64,prune=200ms,compact-min=256")
	v := newVolume(t)
	origin, clone, snap := v.path("origin"), v.path("clone"), v.path("snap")
	testutil.Check(t, os.Mkdir(origin, 0o755))
	ops := testutil.EnvInt(t, "DOPPEL_FSSTRESS_OPS", 10000)
	runLong(t, v.Mnt, fsstress, "-d", origin, "-n", strconv.Itoa(ops/2), "-p", "2", "-s", "11")
	doppelOK(t, "clone", origin, clone)
	doppelOK(t, "snapshot", origin, snap)
	before, err := snapshotTree(snap)
	testutil.Check(t, err)

	errs := make(chan string, 2)
	for i, dir := range []string{origin, clone} {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, fsstress, "-d", dir, "-n", strconv.Itoa(ops), "-p", "2", "-s", strconv.Itoa(12+i))
			out, err := cmd.CombinedOutput()
			if err != nil {
				errs <- fmt.Sprintf("fsstress in %s: %v\n%s", dir, err, out)
				return
			}
			errs <- ""
		}()
	}
	for range 2 {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}

	after, err := snapshotTree(snap)
	testutil.Check(t, err)
	if d := diffTrees(before, after); len(d) > 0 {
		t.Fatalf("the snapshot changed while its origin was stressed (%d differences):\n%s", len(d), strings.Join(d[:min(len(d), 20)], "\n"))
	}
	journal, full := diffJSON(t, origin, clone), diffJSON(t, "--full", origin, clone)
	t.Logf("%d entries differ; the %s diff compared %d (from %d journal entries), the %s one %d",
		len(full.Entries), journal.Method, journal.Compared, journal.JournalRead, full.Method, full.Compared)
	if journal.Method == full.Method {
		t.Errorf("both diffs took the %s method: the journal's was not tested", journal.Method)
	}
	if j, f := diffEntries(journal), diffEntries(full); j != f {
		t.Fatalf("the journal's diff and the full walk's differ:\njournal (%s):\n%s\nfull (%s):\n%s", journal.Method, j, full.Method, f)
	}
	v.umount(t)
	v.fsck(t)
}

// diffEntries is a diff's entries, one "STATUS PATH TYPE" line each,
// sorted.
func diffEntries(r diffResult) string {
	var lines []string
	for _, e := range r.Entries {
		lines = append(lines, e.Status+" "+e.Path+" "+e.Type)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
