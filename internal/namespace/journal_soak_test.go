package namespace_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
)

// TestJournalSoak churns files in rounds and checks that the metadata's
// size on disk (synced and compacted) stays within 1.5x of its size
// after the first round. DOPPEL_JOURNAL_SOAK=files,rounds sizes it
// (100000,10 is the figure); without it a small run.
func TestJournalSoak(t *testing.T) {
	files, rounds := 2000, 5
	if s := os.Getenv("DOPPEL_JOURNAL_SOAK"); s != "" {
		var err error
		f, r, _ := cut(s)
		if files, err = strconv.Atoi(f); err != nil {
			t.Fatal(err)
		}
		if rounds, err = strconv.Atoi(r); err != nil {
			t.Fatal(err)
		}
	}
	v, dir := openPruned(t)
	if _, ok := v.Meta.(meta.Compacter); !ok {
		// What it measures is Pebble's table files after compaction;
		// pgstore's space is PostgreSQL's (VACUUM) business.
		t.Skipf("the metadata store (%T) has no table files to measure", v.Meta)
	}
	v.NS.SetJournalKeep(0) // the default retention, as a mounted volume has
	work := testutil.Must(v.NS.Mkdir(root, vfs.RootIno, "work", 0o755)).Ino
	var first, firstUsage int64
	var firstKeys int
	for r := 1; r <= rounds; r++ {
		churn(t, v, work, files)
		testutil.Must(v.NS.PruneJournal())
		if err := v.NS.SyncFS(); err != nil { // doppel sync
			t.Fatal(err)
		}
		// The reclaimer punches freed chunks once their frees are durable,
		// then deletes their free records (tens of thousands after a large
		// round, a few seconds of work).
		start := time.Now()
		for {
			it := testutil.Must(v.Meta.NewIter([]byte{'f'}, []byte{'g'}))
			left := it.First()
			it.Close()
			if !left {
				break
			}
			if time.Since(start) > 2*time.Minute {
				t.Fatalf("round %d: free records still wait for the reclaimer after %v", r, time.Since(start))
			}
			time.Sleep(50 * time.Millisecond)
		}
		// Tables only: the write-ahead log is a fixed few MiB (preallocated
		// and recycled) that DiskUsage counts too.
		compactTables(t, v.Meta)
		size, usage, keys := tableBytes(t, dir), v.Meta.DiskUsage(), journalKeys(t, v)
		if r == 1 {
			first, firstUsage, firstKeys = size, usage, keys
		}
		t.Logf("round %d: metadata tables %d bytes (%.2fx round 1), store %d bytes with its log (%.2fx), %d journal keys",
			r, size, float64(size)/float64(first), usage, float64(usage)/float64(firstUsage), keys)
		if os.Getenv("DOPPEL_SOAK_KEYS") != "" {
			cnt := map[byte]int{}
			it := testutil.Must(v.Meta.NewIter(nil, []byte{0xff}))
			for ok := it.First(); ok; ok = it.Next() {
				cnt[it.Key()[0]]++
			}
			it.Close()
			t.Logf("keys by prefix: %v", cnt)
		}
		// The log is not checked: it grows to its preallocated size (about
		// 9 MiB) over the first rounds of a small run, then stays.
		if float64(size) > 1.5*float64(first) {
			if lsm, ok := v.Meta.(interface{ LSM() string }); ok {
				t.Logf("the metadata store's levels:\n%s", lsm.LSM())
			}
			t.Fatalf("round %d: metadata tables %d bytes, round 1 %d", r, size, first)
		}
		if float64(keys) > 1.1*float64(firstKeys) {
			t.Fatalf("round %d: %d journal keys after pruning, %d after round 1", r, keys, firstKeys)
		}
	}
}

// compactTables compacts the store and waits until the tables the
// compaction replaced are deleted.
func compactTables(t *testing.T, m meta.Store) {
	t.Helper()
	if err := m.(meta.Compacter).Compact(); err != nil {
		t.Fatal(err)
	}
	tables := m.(interface{ TableBytes() (live, pending int64) })
	for i := 0; i < 600; i++ {
		if _, pending := tables.TableBytes(); pending == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tableBytes sums the metadata store's table files below dir.
func tableBytes(t *testing.T, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".sst") {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == ',' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
