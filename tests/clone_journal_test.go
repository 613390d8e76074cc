package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestCloneDiffWhileJournalCompacts: a mounted volume whose daemon prunes
// and compacts the change journal all the time (DOPPEL_JOURNAL) while a
// tree and its clone are changed through the mount and diffed: every diff
// succeeds, the journal's diff equals a full walk's at the end, it reads
// far fewer entries than were written (compaction ran), and fsck is clean.
func TestCloneDiffWhileJournalCompacts(t *testing.T) {
	t.Setenv("DOPPEL_JOURNAL", "keep=8,prune=50ms,compact-min=64")
	v := newVolume(t)
	src, clone := v.path("src"), v.path("c")
	testutil.Check(t, os.MkdirAll(filepath.Join(src, "tmp"), 0o755))
	for i := range 20 {
		testutil.Check(t, os.WriteFile(filepath.Join(src, fmt.Sprint("f", i)), []byte("first"), 0o644))
	}
	doppelOK(t, "clone", src, clone)

	done := make(chan error, 1)
	go func() { // the same names made, written and removed again and again
		for round := range 60 {
			for _, top := range []string{src, clone} {
				for i := range 10 {
					p := filepath.Join(top, "tmp", fmt.Sprint("n", i))
					if err := os.WriteFile(p, []byte(fmt.Sprint(round)), 0o644); err != nil {
						done <- err
						return
					}
					if err := os.Remove(p); err != nil {
						done <- err
						return
					}
				}
				if err := os.WriteFile(filepath.Join(top, fmt.Sprint("f", round%20)), []byte(fmt.Sprint("round ", round)), 0o644); err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	diffs := 0
	for running := true; running; diffs++ {
		select {
		case err := <-done:
			testutil.Check(t, err)
			running = false
		default:
		}
		diffJSON(t, src, clone)
	}
	// The pruner's passes compact once thousands of entries lie below the
	// window: wait for one.
	var journal diffResult
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		journal = diffJSON(t, src, clone)
		if journal.JournalRead < 500 || time.Now().After(deadline) {
			break
		}
	}
	full := diffJSON(t, "--full", src, clone)
	t.Logf("%d diffs while changing; at the end %d differences, the journal's diff read %d entries (about 2,400 changes were made)", diffs, len(full.Entries), journal.JournalRead)
	if journal.Method != "journal" || diffEntries(journal) != diffEntries(full) {
		t.Fatalf("the journal's diff (%s):\n%s\nthe full walk's:\n%s", journal.Method, diffEntries(journal), diffEntries(full))
	}
	if journal.JournalRead >= 500 {
		t.Fatalf("the journal's diff read %d entries: the daemon did not compact", journal.JournalRead)
	}
	v.umount(t)
	v.fsck(t)
}
