package sharedtest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/blob/s3store"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/meta/pgstore"
)

// Stores is where one test keeps a metadata store and a chunk store of
// the matrix's kind: a Pebble store and segment files in Dir (embedded),
// a schema of its own on the server and segment files in Dir (postgres),
// or that schema and a key prefix of its own in the bucket (postgres+s3).
// Open opens them, and opens them again after they were closed: a
// restart of the same volume.
//
// These are the raw stores, without the wiring of the volume package: an
// S3 store here numbers its packs from a file in Dir and keeps its
// dead-span ledger there, where a volume keeps both in the metadata
// store.
type Stores struct {
	Dir     string
	schema  string // "" for embedded
	dataURL string // "" unless postgres+s3
}

// NewStores picks the places of one test's stores; dir is the test's
// directory for the local part (a t.TempDir()).
func NewStores(dir string) Stores {
	s := Stores{Dir: dir}
	if Postgres() {
		MetaURL() // panics without Main
		s.schema = fmt.Sprintf("content_%d", schemas.Add(1))
		s.dataURL = DataURL()
	}
	return s
}

// Open opens the stores. The caller closes them (blobs before meta, as a
// volume does).
func (s Stores) Open(t testing.TB) (meta.Store, blob.Store) {
	t.Helper()
	m, err := s.openMeta()
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.openBlobs()
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	return m, b
}

func (s Stores) openMeta() (meta.Store, error) {
	if s.schema == "" {
		return meta.OpenPebble(filepath.Join(s.Dir, "meta"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return pgstore.Open(ctx, pgstore.Options{URL: MetaURL(), Schema: s.schema, Create: true})
}

func (s Stores) openBlobs() (blob.Store, error) {
	if s.dataURL == "" {
		return blob.OpenDir(filepath.Join(s.Dir, "chunks"), blob.Options{})
	}
	cfg, err := s3store.ParseURL(s.dataURL)
	if err != nil {
		return nil, err
	}
	if cfg.Credentials, err = s3store.LoadCredentials(); err != nil {
		return nil, err
	}
	cfg.Dir = filepath.Join(s.Dir, "s3")
	cfg.CacheBytes = CacheBytes()
	cfg.Unpadded = true // as new volumes' packs are
	return s3store.Open(cfg)
}
