package pgstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/meta/storetest"
	"github.com/doppelfs/doppel/internal/testutil/pgtest"
)

// schemaFor names the schema that stands for a test's store directory, so
// that opening the same directory again opens the same volume.
func schemaFor(dir string) string {
	h := sha256.Sum256([]byte(dir))
	return "t_" + hex.EncodeToString(h[:10])
}

func opener(dsn string) storetest.Opener {
	return func(t testing.TB, dir string) meta.Store {
		t.Helper()
		s, err := pgstore.Open(context.Background(), pgstore.Options{URL: dsn, Schema: schemaFor(dir)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// TestConformance runs the suite every meta.Store passes, against a
// private PostgreSQL server.
func TestConformance(t *testing.T) {
	srv := pgtest.Start(t)
	storetest.Run(t, opener(srv.CreateDB(t, "conformance")))
}
