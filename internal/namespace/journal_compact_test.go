package namespace_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

// A clone's diff with its origin after heavy churn of the same files and
// names reads what changed once compacted, not every change: the same
// differences as before compaction and as a full walk, from a fraction
// of the entries.
func TestJournalCompactionKeepsDiffs(t *testing.T) {
	v, _ := openPruned(t)
	src, c := treeAndClone(t, v, 20)
	tmp := testutil.Must(v.NS.Mkdir(root, src, "tmp", 0o755)).Ino
	for round := range 40 {
		for i := range 5 {
			rewrite(t, v, src, fmt.Sprintf("f%d", i), fmt.Sprint("round ", round))
			rewrite(t, v, c, fmt.Sprintf("f%d", 10+i), fmt.Sprint("clone round ", round))
		}
		churn(t, v, tmp, 10) // the same ten names made and removed again
	}
	writeFile(t, v.NS, tmp, "kept", []byte("k"))
	testutil.Must(0, v.NS.Unlink(src, "f19"))

	before := diffBoth(t, v, "/src", "/c")
	keysBefore := journalKeys(t, v)
	res := testutil.Must(v.NS.CompactJournal())
	if res.Deleted == 0 || res.Bound == 0 {
		t.Fatalf("compaction did nothing: %+v", res)
	}
	after := diffBoth(t, v, "/src", "/c")
	if !slices.Equal(after.lines, before.lines) {
		t.Fatalf("diff after compaction:\n %q\nbefore:\n %q", after.lines, before.lines)
	}
	keysAfter := journalKeys(t, v)
	t.Logf("journal keys %d -> %d; diff read %d -> %d entries (%d differences)", keysBefore, keysAfter, before.read, after.read, len(after.lines))
	if after.read*4 > before.read {
		t.Fatalf("the diff read %d journal entries after compaction, %d before", after.read, before.read)
	}
	if keysAfter != keysBefore-res.Deleted {
		t.Fatalf("%d journal keys after deleting %d of %d", keysAfter, res.Deleted, keysBefore)
	}
	// A second pass finds nothing more; a cursor cannot start below the bound.
	if again := testutil.Must(v.NS.CompactJournal()); again.Deleted != 0 {
		t.Fatalf("a second pass deleted %d entries", again.Deleted)
	}
	if err := v.NS.SetJournalCursor("send", res.Bound-1); !errors.Is(err, syscall.ERANGE) {
		t.Fatalf("a cursor below the compaction bound: err %v, want ERANGE", err)
	}
	testutil.Must(0, v.NS.SetJournalCursor("send", res.Bound))
}

// The pruner compacts by itself once enough entries have come below the
// bound, and what a clone holds then stays bounded by the names and live
// inodes changed, round after round of files made and deleted.
func TestJournalPrunerCompacts(t *testing.T) {
	v, _ := openPruned(t)
	src := testutil.Must(v.NS.Mkdir(root, vfs.RootIno, "src", 0o755)).Ino
	writeFile(t, v.NS, src, "a", []byte("one"))
	testutil.Must(v.NS.ClonePath("/src", "/c", namespace.CloneOptions{}))
	work := testutil.Must(v.NS.Mkdir(root, src, "work", 0o755)).Ino
	var held []int
	compacted := 0
	for range 6 {
		churn(t, v, work, 1000)
		p := testutil.Must(v.NS.PruneJournal())
		compacted += p.Compacted.Deleted
		held = append(held, journalKeys(t, v))
	}
	if compacted == 0 {
		t.Fatalf("the pruner never compacted; keys held after each round %v", held)
	}
	// Without compaction each round adds about 5,000 entries.
	if last := held[len(held)-1]; last > 3*held[0] {
		t.Fatalf("journal keys held after each round: %v", held)
	}
	d := diffBoth(t, v, "/src", "/c")
	if len(d.lines) != 1 || d.lines[0] != "D\twork\t[]" {
		t.Fatalf("diff of a clone whose origin gained an empty directory: %q", d.lines)
	}
	t.Logf("keys held after each round %v; %d compacted; the diff read %d", held, compacted, d.read)
}

type diffSides struct {
	lines []string
	read  int
}

// diffBoth diffs a and b from the journal and by walking, which must agree.
func diffBoth(t *testing.T, v *volume.Volume, a, b string) diffSides {
	t.Helper()
	ctx := context.Background()
	fast := testutil.Must(v.NS.Diff(ctx, a, b, namespace.DiffOptions{}))
	full := testutil.Must(v.NS.Diff(ctx, a, b, namespace.DiffOptions{Full: true}))
	if fast.Method != "journal" {
		t.Fatalf("diff %s %s by %s, want the journal", a, b, fast.Method)
	}
	got, want := diffLines(fast.Entries, true), diffLines(full.Entries, true)
	if !slices.Equal(got, want) {
		t.Fatalf("diff %s %s from the journal:\n %q\nby walking:\n %q", a, b, got, want)
	}
	return diffSides{lines: got, read: fast.JournalRead}
}

// Entries of a directory deleted with everything in it go, its names'
// too: a tree made and removed again and again leaves nothing behind.
func TestJournalCompactionDropsDeletedTrees(t *testing.T) {
	v, _ := openPruned(t)
	src := testutil.Must(v.NS.Mkdir(root, vfs.RootIno, "src", 0o755)).Ino
	writeFile(t, v.NS, src, "a", []byte("one"))
	testutil.Must(v.NS.ClonePath("/src", "/c", namespace.CloneOptions{}))
	base := journalKeys(t, v)
	for round := range 20 {
		tmp := testutil.Must(v.NS.Mkdir(root, src, fmt.Sprint("tmp", round), 0o755)).Ino
		churn(t, v, tmp, 20)
		for i := range 5 {
			writeFile(t, v.NS, tmp, fmt.Sprint("left", i), []byte("x"))
			testutil.Must(0, v.NS.Unlink(tmp, fmt.Sprint("left", i)))
		}
		testutil.Must(0, v.NS.Rmdir(src, fmt.Sprint("tmp", round)))
	}
	before := journalKeys(t, v)
	res := testutil.Must(v.NS.CompactJournal())
	after := journalKeys(t, v)
	t.Logf("journal keys: %d with the clone, %d after 20 trees made and removed, %d compacted (%d deleted)", base, before, after, res.Deleted)
	// What stays: src's entry and its 20 names (each tmpN made and
	// removed), the clone's, and the retention window's last version.
	if after > base+30 {
		t.Fatalf("%d journal keys left of %d (%d before the churn)", after, before, base)
	}
	if d := diffBoth(t, v, "/src", "/c"); len(d.lines) != 0 {
		t.Fatalf("diff after trees made and removed: %q", d.lines)
	}
}

// Compaction and pruning in a loop while files in a tree and its clone
// are rewritten, made and deleted, and diffs and scans run: no error
// (walks of the live state failed with ENOENT when they met an entry
// whose inode had gone since they listed it: they read one snapshot
// now), and the diff after it all agrees with a full walk (the race
// detector watches in make test-race).
func TestJournalCompactionWhileChanging(t *testing.T) {
	v, _ := openPruned(t)
	src, c := treeAndClone(t, v, 10)
	done := make(chan struct{})
	errs := make(chan error, 2)
	// repeat runs step until done is closed or it fails.
	repeat := func(step func() error) {
		for {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			if err := step(); err != nil {
				errs <- err
				return
			}
		}
	}
	go repeat(func() error { // the journal's upkeep
		if _, err := v.NS.CompactJournal(); err != nil {
			return fmt.Errorf("compact: %w", err)
		}
		if _, err := v.NS.PruneJournal(); err != nil {
			return fmt.Errorf("prune: %w", err)
		}
		return nil
	})
	go repeat(func() error { // diffs and scans while it all changes
		ctx := context.Background()
		if _, err := v.NS.Diff(ctx, "/src", "/c", namespace.DiffOptions{}); err != nil {
			return fmt.Errorf("diff: %w", err)
		}
		if _, err := v.NS.Diff(ctx, "/src", "/c", namespace.DiffOptions{Full: true}); err != nil {
			return fmt.Errorf("diff --full: %w", err)
		}
		if _, err := v.NS.ScanGroups(ctx, []string{"/c"}, "/src"); err != nil {
			return fmt.Errorf("scan: %w", err)
		}
		return nil
	})
	for round := range 30 {
		dir := testutil.Must(v.NS.Mkdir(root, c, fmt.Sprint("d", round), 0o755)).Ino
		churn(t, v, dir, 10)
		for i := range 3 {
			rewrite(t, v, src, fmt.Sprintf("f%d", (round+i)%10), fmt.Sprint("src ", round))
			rewrite(t, v, c, fmt.Sprintf("f%d", (round+i+5)%10), fmt.Sprint("c ", round))
		}
		if round%3 == 0 {
			testutil.Must(0, v.NS.Rmdir(c, fmt.Sprint("d", round)))
		}
	}
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	testutil.Must(v.NS.CompactJournal())
	d := diffBoth(t, v, "/src", "/c")
	t.Logf("%d differences; the diff read %d journal entries, %d keys left", len(d.lines), d.read, journalKeys(t, v))
}

// treeAndClone makes /src with files f0... of one byte each and clones it
// to /c.
func treeAndClone(t *testing.T, v *volume.Volume, files int) (src, c uint64) {
	t.Helper()
	src = testutil.Must(v.NS.Mkdir(root, vfs.RootIno, "src", 0o755)).Ino
	for i := range files {
		writeFile(t, v.NS, src, fmt.Sprintf("f%d", i), []byte("x"))
	}
	testutil.Must(v.NS.ClonePath("/src", "/c", namespace.CloneOptions{}))
	return src, testutil.Must(v.NS.Lookup(vfs.RootIno, "c")).Ino
}
