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
package meta
