// Package meta is doppel's metadata store: an ordered, transactional
// key-value store. Every metadata change of the file system is one atomic
// Batch; readers see committed state. The embedded backend is Pebble; the
// PostgreSQL backend of shared volumes is package meta/pgstore
// (docs/SHARED.md).
//
// The store knows nothing of what keys mean: package schema defines the key
// layout and record encodings.
//
// Every backend passes the conformance suite in meta/storetest
// (pebble_test.go runs it for Pebble, pgstore's store_test.go for
// PostgreSQL).
//
// Files:
//
//	store.go          the interfaces: Reader, Iterator, Batch, Snapshot, Store and the optional capabilities
//	delete.go         DeleteEach: a small range deleted key by key, not as one range deletion
//	pebble.go         the embedded store on Pebble: opening, batches, snapshots, metrics
//	pebbleopts.go     Pebble's tuning: memtable and block cache sizes, the tables' filters and compression
//	pebbleopts_cgo.go whether the block cache lives outside the Go heap (with and without cgo)
//	pebble_getmany.go GetMany of the store and of its batches: prefix seeks that consult bloom filters
//	softwal.go        Pebble's log written to the OS on every commit, synced only when asked
//	failstop.go       a store that hit a fatal I/O error fails every later write
//	log.go            Pebble's messages to slog; its Fatalf becomes the store's failure
package meta
