package pgstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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
		s, err := pgstore.Open(context.Background(), pgstore.Options{URL: dsn, Schema: schemaFor(dir), Create: true})
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

// env is one server shared by the subtests of TestStore, each with a
// schema of its own.
type env struct {
	srv *pgtest.Server
	dsn string
	n   int
}

func (e *env) open(t testing.TB) *pgstore.Store {
	t.Helper()
	return e.openAt(t, e.schema())
}

// openAt opens the store of schema (again: a remount).
func (e *env) openAt(t testing.TB, schema string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), pgstore.Options{URL: e.dsn, Schema: schema, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (e *env) schema() string {
	e.n++
	return fmt.Sprintf("s%d", e.n)
}

// TestStore runs what pgstore does beyond the conformance suite.
func TestStore(t *testing.T) {
	// The WAL writer writes commits without sync out only every 10 s, so
	// that a crash right after one loses it (async_test.go).
	srv := pgtest.StartWith(t, pgtest.Options{Settings: []string{"wal_writer_delay=10s"}})
	e := &env{srv: srv, dsn: srv.CreateDB(t, "store")}
	for _, tc := range []struct {
		name string
		test func(*testing.T, *env)
	}{
		{"RoundTrips", testRoundTrips},
		{"IteratorModel", testIteratorModel},
		{"BatchSeesLaterCommits", testBatchSeesLaterCommits},
		{"DeleteRange", testDeleteRange},
		{"GetMany", testGetMany},
		{"LookupsUseTheIndexAsTheTableGrows", testLookupsUseTheIndexAsTheTableGrows},
		{"RecordCache", testRecordCache},
		{"RecordCacheRaces", testRecordCacheRaces},
		{"LockedBatches", testLockedBatches},
		{"ChangeLog", testChangeLog},
		{"ForeignCommitDuringOwnCommit", testForeignCommitDuringOwnCommit},
		{"Listen", testListen},
		{"Leases", testLeases},
		{"LeaseOfDeadSession", testLeaseOfDeadSession},
		{"FailedCommitLeavesNothing", testFailedCommitLeavesNothing},
		{"OverlappingConcurrentCommits", testOverlappingConcurrentCommits},
		{"SnapshotAcrossPages", testSnapshotAcrossPages},
		{"VersionPerCommit", testVersionPerCommit},
		{"DiskUsageGrows", testDiskUsageGrows},
		{"NewerFormatRefused", testNewerFormatRefused},
		{"MissingNotCreated", testMissingNotCreated},
		{"Credentials", testCredentials},
		{"IteratorErrorIsNotTheEnd", testIteratorErrorIsNotTheEnd},
		{"UnflushedBound", testUnflushedBound},
		{"Sessions", testSessions},                                                         // restarts the shared server
		{"CrashLosesUnflushedCommits", testCrashLosesUnflushedCommits},                     // crashes the shared server
		{"CrashKeepsUnflushedCommits", testCrashKeepsUnflushedCommits},                     // crashes the shared server
		{"CrashLosesLockedCommitOfSeveralHosts", testCrashLosesLockedCommitOfSeveralHosts}, // crashes the shared server
		{"CrashDuringCommits", testCrashDuringCommits},                                     // crashes the shared server
		{"CrashAfterSync", testCrashAfterSync},                                             // crashes the shared server
		{"FlushBehind", testFlushBehind},                                                   // crashes the shared server
		{"ServerRestart", testServerRestart},                                               // last: it restarts the shared server
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, e) })
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fill commits keys k00000.. k<n> with values v<i>, in batches of 1000.
func fill(t testing.TB, s meta.Store, n int) {
	t.Helper()
	for i := 0; i < n; i += 1000 {
		b := s.NewBatch()
		for j := i; j < min(i+1000, n); j++ {
			must(t, b.Set(fmt.Appendf(nil, "k%05d", j), fmt.Appendf(nil, "v%d", j)))
		}
		must(t, b.Commit(false))
		must(t, b.Close())
	}
}
