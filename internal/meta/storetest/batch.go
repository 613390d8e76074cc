package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

func testGetSetDelete(t *testing.T, open Opener) {
	s := fresh(t, open)
	WantMissing(t, s, "a")
	Commit(t, s, map[string][]byte{"a": []byte("1"), "b": []byte("2"), "empty": {}})
	WantValue(t, s, "a", "1")
	WantValue(t, s, "b", "2")
	WantValue(t, s, "empty", "") // an empty value is a value, not a missing key
	Commit(t, s, map[string][]byte{"a": []byte("one"), "b": nil})
	WantValue(t, s, "a", "one")
	WantMissing(t, s, "b")
	Commit(t, s, map[string][]byte{"never": nil}) // deleting a missing key is fine
	WantMissing(t, s, "never")
}

// Values are documented as copies the caller owns: scribbling on one
// must not change the store or later reads.
func testGetReturnsCopy(t *testing.T, open Opener) {
	s := fresh(t, open)
	Commit(t, s, map[string][]byte{"k": []byte("value")})
	v, err := s.Get([]byte("k"))
	must(t, err)
	copy(v, "XXXXX")
	WantValue(t, s, "k", "value")

	b := s.NewBatch()
	defer b.Close()
	must(t, b.Set([]byte("k2"), []byte("batch")))
	v, err = b.Get([]byte("k2"))
	must(t, err)
	copy(v, "XXXXX")
	WantValue(t, b, "k2", "batch")
}

// Callers reuse key and value buffers after Set.
func testSetCopiesArguments(t *testing.T, open Opener) {
	s := fresh(t, open)
	b := s.NewBatch()
	defer b.Close()
	key, val := []byte("key"), []byte("val")
	must(t, b.Set(key, val))
	copy(key, "zzz")
	copy(val, "zzz")
	must(t, b.Commit(false))
	WantValue(t, s, "key", "val")
	WantMissing(t, s, "zzz")
}

func testBatchSeesOwnWrites(t *testing.T, open Opener) {
	s := fresh(t, open)
	Commit(t, s, map[string][]byte{"a": []byte("1"), "c": []byte("3"), "e": []byte("5")})
	b := s.NewBatch()
	defer b.Close()
	for _, op := range []struct{ k, v string }{{"b", "2"}, {"c", "33"}, {"d", "4"}} {
		must(t, b.Set([]byte(op.k), []byte(op.v)))
	}
	must(t, b.Delete([]byte("e")))

	// The batch reads its writes over the committed state...
	WantValue(t, b, "a", "1")
	WantValue(t, b, "b", "2")
	WantValue(t, b, "c", "33")
	WantMissing(t, b, "e")
	if got, want := Keys(t, b, "", "", false), []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("batch iterator keys %q, want %q", got, want)
	}
	it, err := b.NewIter(nil, nil)
	must(t, err)
	if !it.SeekGE([]byte("c")) || string(it.Value()) != "33" {
		t.Errorf("batch iterator at c: valid %v value %q, want 33", it.Valid(), it.Value())
	}
	it.Close()

	// ...while the store does not see them before Commit.
	WantMissing(t, s, "b")
	WantValue(t, s, "c", "3")
	WantValue(t, s, "e", "5")
	if got, want := Keys(t, s, "", "", false), []string{"a", "c", "e"}; !slices.Equal(got, want) {
		t.Errorf("store keys before commit %q, want %q", got, want)
	}
	must(t, b.Commit(false))
	WantValue(t, s, "b", "2")
	WantValue(t, s, "c", "33")
	WantMissing(t, s, "e")
	if got, want := Keys(t, s, "", "", false), []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("store keys after commit %q, want %q", got, want)
	}
}

// Within one batch the last write of a key wins, in both orders.
func testBatchSetThenDelete(t *testing.T, open Opener) {
	s := fresh(t, open)
	Commit(t, s, map[string][]byte{"x": []byte("old")})
	b := s.NewBatch()
	defer b.Close()
	must(t, b.Set([]byte("n"), []byte("new")))
	must(t, b.Delete([]byte("n")))
	must(t, b.Delete([]byte("x")))
	must(t, b.Set([]byte("x"), []byte("again")))
	WantMissing(t, b, "n")
	WantValue(t, b, "x", "again")
	must(t, b.Commit(false))
	WantMissing(t, s, "n")
	WantValue(t, s, "x", "again")
}

func testUncommittedBatchLeavesNoTrace(t *testing.T, open Opener) {
	dir := t.TempDir()
	s := open(t, dir)
	Commit(t, s, map[string][]byte{"keep": []byte("1")})
	b := s.NewBatch()
	must(t, b.Set([]byte("ghost"), []byte("boo")))
	must(t, b.Delete([]byte("keep")))
	must(t, b.Close())
	must(t, b.Close()) // closing twice is harmless
	WantMissing(t, s, "ghost")
	WantValue(t, s, "keep", "1")
	if got := Keys(t, s, "", "", false); !slices.Equal(got, []string{"keep"}) {
		t.Errorf("keys after discarded batch: %q", got)
	}
	must(t, s.Close()) // nor after reopening
	s = open(t, dir)
	defer s.Close()
	WantMissing(t, s, "ghost")
	WantValue(t, s, "keep", "1")
}

// Two open batches do not see each other's writes.
func testBatchIsolation(t *testing.T, open Opener) {
	s := fresh(t, open)
	b1, b2 := s.NewBatch(), s.NewBatch()
	defer b1.Close()
	defer b2.Close()
	must(t, b1.Set([]byte("one"), []byte("1")))
	must(t, b2.Set([]byte("two"), []byte("2")))
	WantMissing(t, b1, "two")
	WantMissing(t, b2, "one")
	must(t, b1.Commit(false))
	must(t, b2.Commit(false))
	WantValue(t, s, "one", "1")
	WantValue(t, s, "two", "2")
}

// Batches of disjoint keys committed from many goroutines all land.
func testConcurrentBatches(t *testing.T, open Opener) {
	s := fresh(t, open)
	const workers, perWorker = 8, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				b := s.NewBatch()
				err := b.Set(fmt.Appendf(nil, "w%d/%03d", w, i), fmt.Appendf(nil, "%d", i))
				if err == nil {
					err = b.Commit(false)
				}
				b.Close()
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := len(Keys(t, s, "w", "x", false)); got != workers*perWorker {
		t.Fatalf("%d keys after concurrent commits, want %d", got, workers*perWorker)
	}
	WantValue(t, s, "w3/049", "49")
}

func testReopenKeepsCommittedData(t *testing.T, open Opener) {
	dir := t.TempDir()
	s := open(t, dir)
	const n = 500
	b := s.NewBatch()
	for i := range n {
		must(t, b.Set(fmt.Appendf(nil, "key%05d", i), fmt.Appendf(nil, "value%d", i)))
	}
	must(t, b.Commit(false)) // not synced: Close must still keep it
	must(t, b.Close())
	Commit(t, s, map[string][]byte{"key00007": nil})
	must(t, s.Close())

	s = open(t, dir)
	defer s.Close()
	if keys := Keys(t, s, "key", "kez", false); len(keys) != n-1 {
		t.Fatalf("%d keys after reopen, want %d", len(keys), n-1)
	}
	WantMissing(t, s, "key00007")
	WantValue(t, s, "key00123", "value123")
	WantValue(t, s, "key00499", "value499")
}

func testSyncCommitAndSync(t *testing.T, open Opener) {
	dir := t.TempDir()
	s := open(t, dir)
	b := s.NewBatch()
	must(t, b.Set([]byte("durable"), []byte("yes")))
	must(t, b.Commit(true))
	must(t, b.Close())
	Commit(t, s, map[string][]byte{"later": []byte("synced")})
	must(t, s.Sync())
	must(t, s.Sync()) // with nothing new to write too
	if u := s.DiskUsage(); u <= 0 {
		t.Errorf("DiskUsage = %d, want > 0", u)
	}
	must(t, s.Close())

	s = open(t, dir)
	defer s.Close()
	WantValue(t, s, "durable", "yes")
	WantValue(t, s, "later", "synced")
}
