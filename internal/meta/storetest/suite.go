package storetest

import (
	"errors"
	"testing"

	"github.com/doppelfs/doppel/internal/meta"
)

// Opener opens the store kept at dir, creating it when dir is new. A test
// closes what it opened; opening the same dir again must show what was
// committed there (for a server-backed store, dir names the store's
// namespace, e.g. a schema).
type Opener func(t testing.TB, dir string) meta.Store

// Run runs the whole suite against the backend open opens.
func Run(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, Opener)
	}{
		{"GetSetDelete", testGetSetDelete},
		{"GetReturnsCopy", testGetReturnsCopy},
		{"SetCopiesArguments", testSetCopiesArguments},
		{"BatchSeesOwnWrites", testBatchSeesOwnWrites},
		{"BatchSetThenDelete", testBatchSetThenDelete},
		{"UncommittedBatchLeavesNoTrace", testUncommittedBatchLeavesNoTrace},
		{"BatchIsolation", testBatchIsolation},
		{"ConcurrentBatches", testConcurrentBatches},
		{"ReopenKeepsCommittedData", testReopenKeepsCommittedData},
		{"SyncCommitAndSync", testSyncCommitAndSync},
		{"Iterator", testIterator},
		{"IteratorSeek", testIteratorSeek},
		{"IteratorSeekThenStep", testIteratorSeekThenStep},
		{"BinaryKeys", testBinaryKeys},
		{"SnapshotIsFrozen", testSnapshotIsFrozen},
		{"IteratorEndIsNoError", testIteratorEndIsNoError},
		{"Model", testModel},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, open) })
	}
}

// fresh opens a new, empty store that is closed when the test ends.
func fresh(t *testing.T, open Opener) meta.Store {
	s := open(t, t.TempDir())
	t.Cleanup(func() { s.Close() })
	return s
}

// Commit applies sets (value nil means delete) in one batch.
func Commit(t testing.TB, s meta.Store, sets map[string][]byte) {
	t.Helper()
	b := s.NewBatch()
	defer b.Close()
	for k, v := range sets {
		var err error
		if v == nil {
			err = b.Delete([]byte(k))
		} else {
			err = b.Set([]byte(k), v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
}

// WantValue fails t unless key holds want in r.
func WantValue(t testing.TB, r meta.Reader, key, want string) {
	t.Helper()
	got, err := r.Get([]byte(key))
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if string(got) != want {
		t.Fatalf("Get(%q) = %q, want %q", key, got, want)
	}
}

// WantMissing fails t unless key is missing from r.
func WantMissing(t testing.TB, r meta.Reader, key string) {
	t.Helper()
	if v, err := r.Get([]byte(key)); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("Get(%q) = %q, %v; want ErrNotFound", key, v, err)
	}
}

// Keys returns the keys of [lower, upper) ("" is no bound), walking
// forward, or backward with back.
func Keys(t testing.TB, r meta.Reader, lower, upper string, back bool) []string {
	t.Helper()
	it, err := r.NewIter(bytesOrNil(lower), bytesOrNil(upper))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	if back {
		for ok := it.Last(); ok; ok = it.Prev() {
			keys = append(keys, string(it.Key()))
		}
	} else {
		for ok := it.First(); ok; ok = it.Next() {
			keys = append(keys, string(it.Key()))
		}
	}
	if err := it.Error(); err != nil {
		t.Fatalf("iterator of [%q, %q) stopped by %v", lower, upper, err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("closing the iterator of [%q, %q): %v", lower, upper, err)
	}
	return keys
}

func bytesOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
