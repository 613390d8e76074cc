// Package pgstore is meta.Store on PostgreSQL, the metadata store of
// shared volumes (docs/SHARED.md). Each volume lives in its own schema, as
// one key/value table that keeps the schema package's key encoding (bytea
// orders like Pebble's keys), a sequence for the volume version and a
// format row.
//
// Reads are single statements at READ COMMITTED; iterators fetch pages of
// rows and hold no connection between moves; a Batch is an overlay in
// memory over the committed state and commits in one round trip (one
// pipelined, implicit transaction), retried on serialization failures and
// deadlocks, and without sync does not wait for the WAL's flush, which
// Sync does; a Snapshot is a REPEATABLE READ transaction on a connection
// of its own.
//
// Files:
//
//   - config.go: Options, Open, the pool's settings, Redact.
//   - schema.go: the volume's tables and the statements on them.
//   - store.go: Store: Get, NewIter, Sync, DiskUsage, Close.
//   - reader.go: running a statement on the pool or a snapshot's
//     connection; reads of the pool tried again when a connection is lost.
//   - pager.go: a key range read page by page, with the window it covers.
//   - iter.go: meta.Iterator over any ordered source (pager or merge).
//   - overlay.go: a batch's writes: ordered point writes, deleted ranges.
//   - merge.go: a batch's view: its overlay over the store's pages.
//   - batch.go: Batch: Get, Set, Delete, DeleteRange, NewIter.
//   - commit.go: Commit in one round trip, its retries, connLost.
//   - async.go: commits without sync that wait for no WAL flush, Sync's
//     flush, and the crash guard that catches a crash of the server.
//   - replay.go: after such a crash, the store's commits it lost (told
//     by the store's marker row) sent again before anything else.
//   - snapshot.go: Snapshot.
//   - cache.go: the record cache (point reads of records read or written;
//     write-through, exact on one host).
//   - session.go: sessions (one row per process that has the volume open,
//     alive while its advisory lock and heartbeat are; docs/SHARED.md 9.1).
//   - txlock.go: LockedBatch, the volume transaction lock (9.2), and
//     DropCaches.
//   - changes.go: the change log of several hosts (what each transaction
//     wrote; the record cache drops only what others changed; 9.2).
//   - listen.go: Listen, other hosts' commits through LISTEN/NOTIFY (9.3).
//   - lease.go: TryLease, leases of background work (9.5).
//   - counter.go: Reserve (meta.Counters: pack numbers).
//   - roundtrips.go: counting round trips and the time spent taking the
//     transaction lock (metrics, tests, benchmarks).
//
// Tests run against a private server (testutil/pgtest): store_test.go
// runs the conformance suite (meta/storetest) and TestStore, whose parts
// are in roundtrip_test.go (round trips per batch, Get and scan),
// model_test.go (a randomized model of iterators over many pages, with
// batches and snapshots), behavior_test.go and credentials_test.go.
package pgstore
