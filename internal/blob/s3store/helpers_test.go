package s3store

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// testConfig is a configuration on srv with its own prefix and directory,
// small packs, and few, quick retries (faults are the tests' business).
func testConfig(t testing.TB, srv *s3test.Server, prefix string) Config {
	return Config{
		Endpoint: srv.Endpoint, Region: s3test.Region, Bucket: srv.Bucket, Prefix: prefix,
		Credentials: Credentials{AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey},
		Dir:         t.TempDir(), PackSize: 256 << 10, Attempts: 2, RequestTimeout: 10 * time.Second,
	}
}

func mustOpen(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// putSome puts n random chunks and returns their locations and bytes.
func putSome(t testing.TB, s *Store, r *rand.Rand, n int) ([]blob.Loc, [][]byte) {
	t.Helper()
	var locs []blob.Loc
	var data [][]byte
	for range n {
		d := testutil.RandBytes(r, 1+r.IntN(40<<10))
		loc, err := s.Put(d)
		if err != nil {
			t.Fatal(err)
		}
		locs, data = append(locs, loc), append(data, d)
	}
	return locs, data
}

// putSynced is putSome, then Sync: the chunks are in the object store.
func putSynced(t testing.TB, s *Store, r *rand.Rand, n int) ([]blob.Loc, [][]byte) {
	t.Helper()
	locs, data := putSome(t, s, r, n)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	return locs, data
}

func checkAll(t testing.TB, s *Store, locs []blob.Loc, data [][]byte) {
	t.Helper()
	for i, loc := range locs {
		got, err := s.Read(loc, nil)
		if err != nil {
			t.Fatalf("read %+v: %v", loc, err)
		}
		if !bytes.Equal(got, data[i]) {
			t.Fatalf("read %+v: data differs", loc)
		}
	}
}
