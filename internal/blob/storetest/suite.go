package storetest

import (
	"bytes"
	"testing"

	"github.com/doppelfs/doppel/internal/blob"
)

// Opener opens the store kept at dir, creating it when dir is new. The
// store must seal its segments (or packs) at 1 MiB or less, so that the
// suite sees several. Opening the same dir again must show every chunk
// put and synced there.
type Opener func(t testing.TB, dir string) blob.Store

// Run runs the whole suite against the backend open opens.
func Run(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, Opener)
	}{
		{"RoundTripConcurrent", testRoundTripConcurrent},
		{"EdgeSizes", testEdgeSizes},
		{"PutMany", testPutMany},
		{"ReadMissing", testReadMissing},
		{"Reopen", testReopen},
		{"FreeKeepsOthers", testFreeKeepsOthers},
		{"FreeAllDropsSegment", testFreeAllDropsSegment},
		{"FreeAroundOne", testFreeAroundOne},
		{"Reclaim", testReclaim},
		{"Hints", testHints},
		{"ConcurrentChurn", testConcurrentChurn},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, open) })
	}
}

// fresh opens a new, empty store that is closed when the test ends.
func fresh(t *testing.T, open Opener) blob.Store {
	s := open(t, t.TempDir())
	t.Cleanup(func() { s.Close() })
	return s
}

// Put puts data and fails t on error.
func Put(t testing.TB, s blob.Store, data []byte) blob.Loc {
	t.Helper()
	loc, err := s.Put(data)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// CheckRead fails t unless loc reads back as want.
func CheckRead(t testing.TB, s blob.Store, loc blob.Loc, want []byte) {
	t.Helper()
	got, err := s.Read(loc, make([]byte, len(want)+7))
	if err != nil {
		t.Fatalf("read %+v: %v", loc, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %+v: data differs", loc)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
