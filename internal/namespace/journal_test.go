package namespace_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/voltest"
	"github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

// openPruned opens a volume whose pruner keeps no spare versions and
// runs only when the test asks.
func openPruned(t testing.TB) (*volume.Volume, string) {
	t.Helper()
	dir := t.TempDir()
	if err := voltest.VolumeInit(dir, volume.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	v, err := volume.OpenWith(dir, slog.New(slog.NewTextHandler(io.Discard, nil)),
		namespace.Options{JournalKeep: 1, JournalPruneEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v, dir
}

// journalKeys counts the volume's and the clones' journal keys.
func journalKeys(t testing.TB, v *volume.Volume) int {
	t.Helper()
	n := 0
	for _, r := range [][2][]byte{{{'j'}, {'j' + 1}}, {{'J'}, {'J' + 1}}} {
		it := testutil.Must(v.Meta.NewIter(r[0], r[1]))
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		it.Close()
	}
	return n
}

func prune(t testing.TB, v *volume.Volume) int {
	t.Helper()
	testutil.Must(v.NS.PruneJournal())
	return journalKeys(t, v)
}

// churn creates, writes and deletes n files in dir.
func churn(t *testing.T, v *volume.Volume, dir uint64, n int) {
	t.Helper()
	for i := range n {
		writeFile(t, v.NS, dir, fmt.Sprintf("n%d", i), []byte(fmt.Sprint("data ", i)))
	}
	for i := range n {
		testutil.Must(0, v.NS.Unlink(dir, fmt.Sprintf("n%d", i)))
	}
}

func TestJournalPrunedAcrossRounds(t *testing.T) {
	v, _ := openPruned(t)
	src := testutil.Must(v.NS.Mkdir(root, vfs.RootIno, "src", 0o755)).Ino
	writeFile(t, v.NS, src, "a", []byte("one"))
	work := testutil.Must(v.NS.Mkdir(root, vfs.RootIno, "work", 0o755)).Ino
	churn(t, v, work, 300)
	first := prune(t, v)
	for round := 2; round <= 4; round++ {
		churn(t, v, work, 300)
		if n := prune(t, v); n > first+4 {
			t.Fatalf("round %d: %d journal keys after pruning, %d after the first", round, n, first)
		}
	}
	// A clone made mid-churn holds back what its diff reads, and only that.
	churn(t, v, work, 100)
	testutil.Must(v.NS.ClonePath("/src", "/c", namespace.CloneOptions{}))
	rewrite(t, v, src, "a", "two")
	churn(t, v, work, 300)
	held := prune(t, v)
	if held < 600 {
		t.Fatalf("%d journal keys kept with a clone: what its diff needs is gone", held)
	}
	d := testutil.Must(v.NS.Diff(context.Background(), "/src", "/c", namespace.DiffOptions{}))
	if d.Method != "journal" || len(d.Entries) != 1 || d.Entries[0].Path != "a" || d.Entries[0].Status != "M" {
		t.Fatalf("diff after pruning: %+v", d)
	}
	testutil.Must(0, v.NS.RemoveClone("/c"))
	waitPinsReleased(t, v)
	for i := 0; i < 200; i++ {
		if n := prune(t, v); n <= first+4 {
			return
		}
		time.Sleep(50 * time.Millisecond) // the reaper frees the clone
	}
	t.Fatalf("%d journal keys after the clone went, %d before it", journalKeys(t, v), first)
}

func TestJournalCursorHoldsPruning(t *testing.T) {
	v, _ := openPruned(t)
	work := testutil.Must(v.NS.Mkdir(root, vfs.RootIno, "work", 0o755)).Ino
	churn(t, v, work, 50)
	base := prune(t, v)
	floor := testutil.Must(v.NS.JournalFloor())
	if err := v.NS.SetJournalCursor("send", floor-1); err == nil && floor > 0 {
		t.Fatal("a cursor below the floor was accepted")
	}
	if err := v.NS.SetJournalCursor(strings.Repeat("n", schema.MaxNameBytes+1), floor); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Fatalf("a cursor name longer than %d bytes: err %v, want ENAMETOOLONG", schema.MaxNameBytes, err)
	}
	testutil.Must(0, v.NS.SetJournalCursor("send", floor))
	churn(t, v, work, 200)
	if n := prune(t, v); n < 400 {
		t.Fatalf("%d journal keys with a cursor at the floor: pruned what it needs", n)
	}
	if c := testutil.Must(v.NS.JournalCursors()); c["send"] != floor {
		t.Fatalf("cursors %v", c)
	}
	testutil.Must(0, v.NS.ClearJournalCursor("send"))
	if n := prune(t, v); n > base+4 {
		t.Fatalf("%d journal keys after the cursor went, %d before", n, base)
	}
}

// A diff between a clone and a clone of it reads the journal of those
// two clones, not the churn elsewhere in the volume.
func TestJournalDiffReadsItsTrees(t *testing.T) {
	v, _ := openPruned(t)
	src := testutil.Must(v.NS.Mkdir(root, vfs.RootIno, "src", 0o755)).Ino
	for i := range 20 {
		writeFile(t, v.NS, src, fmt.Sprintf("f%d", i), []byte("x"))
	}
	testutil.Must(v.NS.ClonePath("/src", "/c1", namespace.CloneOptions{}))
	testutil.Must(v.NS.ClonePath("/c1", "/c2", namespace.CloneOptions{}))
	testutil.Must(v.NS.ClonePath("/src", "/other", namespace.CloneOptions{}))
	work := testutil.Must(v.NS.Mkdir(root, vfs.RootIno, "work", 0o755)).Ino
	other := testutil.Must(v.NS.Lookup(vfs.RootIno, "other")).Ino
	churn(t, v, work, 1000)  // the main tree
	churn(t, v, other, 1000) // another clone
	tmp := testutil.Must(v.NS.Mkdir(root, src, "tmp", 0o755)).Ino
	churn(t, v, tmp, 500) // the clones' origin
	c2 := testutil.Must(v.NS.Lookup(vfs.RootIno, "c2")).Ino
	for i := range 3 {
		rewrite(t, v, c2, fmt.Sprintf("f%d", i), "y")
	}
	d := testutil.Must(v.NS.Diff(context.Background(), "/c1", "/c2", namespace.DiffOptions{}))
	var got []string
	for _, e := range d.Entries {
		got = append(got, e.Status+" "+e.Path)
	}
	if want := []string{"M f0", "M f1", "M f2"}; !slices.Equal(got, want) {
		t.Fatalf("diff c1 c2: %v, want %v", got, want)
	}
	t.Logf("diff c1 c2 after %d unrelated journal keys: method %s, %d keys read", journalKeys(t, v), d.Method, d.JournalRead)
	// The clones' materialization and the three changes: tens of keys.
	if d.Method != "journal" || d.JournalRead > 200 {
		t.Fatalf("diff read %d journal keys (%s) after unrelated churn", d.JournalRead, d.Method)
	}
}

// rewrite writes data at the start of an existing file.
func rewrite(t *testing.T, v *volume.Volume, dir uint64, name, data string) {
	t.Helper()
	ino := testutil.Must(v.NS.Lookup(dir, name)).Ino
	h := testutil.Must(v.NS.Open(ino, syscall.O_WRONLY))
	testutil.Must(v.NS.Write(h, 0, []byte(data)))
	testutil.Must(0, v.NS.Release(h))
}

// A directory renamed is compared with everything below it once: the
// changes journaled below it add nothing to compare (the fsstress run on
// a tree and its clone compared twice what a full walk did before).
func TestJournalDiffComparesSubtreesOnce(t *testing.T) {
	v, _ := openPruned(t)
	src := testutil.Must(v.NS.Mkdir(root, vfs.RootIno, "src", 0o755)).Ino
	dir := src
	for _, name := range []string{"a", "b", "c"} {
		dir = testutil.Must(v.NS.Mkdir(root, dir, name, 0o755)).Ino
		for i := range 10 {
			writeFile(t, v.NS, dir, fmt.Sprintf("f%d", i), []byte("x"))
		}
	}
	testutil.Must(v.NS.ClonePath("/src", "/c", namespace.CloneOptions{}))
	testutil.Must(0, v.NS.Rename(src, "a", src, "moved", 0))
	for i := range 10 {
		rewrite(t, v, dir, fmt.Sprintf("f%d", i), "y") // moved/b/c/f*
	}
	d := diffBoth(t, v, "/src", "/c")
	fast := testutil.Must(v.NS.Diff(context.Background(), "/src", "/c", namespace.DiffOptions{}))
	full := testutil.Must(v.NS.Diff(context.Background(), "/src", "/c", namespace.DiffOptions{Full: true}))
	t.Logf("%d differences; the journal's diff compared %d, the walk %d", len(d.lines), fast.Compared, full.Compared)
	if fast.Compared > full.Compared {
		t.Fatalf("the journal's diff compared %d entries, a full walk %d", fast.Compared, full.Compared)
	}
}
