package s3store_test

import (
	"fmt"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/blob/s3store"
	"github.com/doppelfs/doppel/internal/blob/storetest"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

var _ blob.Store = (*s3store.Store)(nil)

// config is a store's configuration on srv, its local directory dir and a
// key prefix of its own (derived from dir, so reopening dir finds it).
func config(srv *s3test.Server, dir string) s3store.Config {
	return s3store.Config{
		Endpoint: srv.Endpoint, Region: s3test.Region, Bucket: srv.Bucket,
		Prefix:      fmt.Sprintf("t/%016x", xxh3.HashString(dir)),
		Credentials: s3store.Credentials{AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey},
		Dir:         dir,
		PackSize:    1 << 20,
	}
}

func open(t testing.TB, cfg s3store.Config) *s3store.Store {
	t.Helper()
	s, err := s3store.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConformance runs the suite every blob.Store passes against a real
// S3 server, with and without the read cache, with packs without padding
// (what new volumes get) and with chunks at 4 KiB boundaries (volumes
// made before).
func TestConformance(t *testing.T) {
	srv := s3test.Start(t)
	for _, cached := range []bool{true, false} {
		for _, unpadded := range []bool{true, false} {
			name := map[bool]string{true: "cache", false: "nocache"}[cached] + map[bool]string{true: "-unpadded", false: "-padded"}[unpadded]
			t.Run(name, func(t *testing.T) {
				storetest.Run(t, func(t testing.TB, dir string) blob.Store {
					cfg := config(srv, dir)
					cfg.Unpadded = unpadded
					if !cached {
						cfg.CacheBytes = -1
					}
					return open(t, cfg)
				})
			})
		}
	}
}
