package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/testutil/pgtest"
)

// BenchmarkStore compares the operations the file system makes most,
// on Pebble and on PostgreSQL over loopback (fsync on, as in production;
// PGTEST_FSYNC=0 turns it off): a batch of 10 sets and its commit, a scan
// of 100 keys, a point read. The PostgreSQL cases also report round trips
// per operation.
//
//	go test ./internal/meta/pgstore -run '^$' -bench Store -benchtime 2000x
func BenchmarkStore(b *testing.B) {
	srv := pgtest.StartWith(b, pgtest.Options{Fsync: os.Getenv("PGTEST_FSYNC") != "0"})
	dsn := srv.CreateDB(b, "bench")
	var wire interface{ Load() int64 }
	stores := []struct {
		name string
		open func(b *testing.B) meta.Store
	}{
		{"pebble", func(b *testing.B) meta.Store {
			p, err := meta.OpenPebble(b.TempDir())
			must(b, err)
			return p
		}},
		{"postgres", func(b *testing.B) meta.Store {
			s, n, err := pgstore.OpenCounting(context.Background(), pgstore.Options{URL: dsn, Schema: "bench", Create: true})
			must(b, err)
			wire = n
			return s
		}},
	}
	for _, st := range stores {
		s := st.open(b)
		fill(b, s, 10000)
		perOp := func(b *testing.B, before int64) {
			if st.name == "postgres" {
				b.ReportMetric(float64(wire.Load()-before)/float64(b.N), "roundtrips/op")
			}
		}
		count := func() int64 {
			if wire == nil || st.name != "postgres" {
				return 0
			}
			return wire.Load()
		}
		b.Run(st.name+"/batch10", func(b *testing.B) {
			before := count()
			for i := range b.N {
				bt := s.NewBatch()
				for j := range 10 {
					must(b, bt.Set(fmt.Appendf(nil, "b%08d.%d", i, j), []byte("some value of a typical size, ~40 bytes")))
				}
				must(b, bt.Commit(false))
				bt.Close()
			}
			perOp(b, before)
		})
		b.Run(st.name+"/scan100", func(b *testing.B) {
			before := count()
			for i := range b.N {
				it, err := s.NewIter(fmt.Appendf(nil, "k%05d", i%9000), nil)
				must(b, err)
				n := 0
				for ok := it.First(); ok && n < 100; ok = it.Next() {
					n++
				}
				must(b, it.Close())
				if n != 100 {
					b.Fatalf("scan saw %d keys", n)
				}
			}
			perOp(b, before)
		})
		b.Run(st.name+"/get", func(b *testing.B) {
			before := count()
			for i := range b.N {
				if _, err := s.Get(fmt.Appendf(nil, "k%05d", i%10000)); err != nil {
					b.Fatal(err)
				}
			}
			perOp(b, before)
		})
		s.Close()
	}
}
