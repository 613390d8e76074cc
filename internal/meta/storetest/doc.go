// Package storetest is the conformance suite every meta.Store backend
// passes (restic's internal/backend/test is the model): Run takes a way to
// open the backend and runs the same tests against it.
//
// Files:
//
//   - suite.go: Run, the Opener, and the helpers the tests share.
//   - batch.go: reads, writes, batches and their isolation, persistence.
//   - iter.go: iterators, bounds, seeks, binary keys, snapshots.
//   - model.go: a randomized model test against a map (seed printed).
//
// What a backend does beyond the interface (Pebble's directory lock, its
// log and durability hook) is tested beside the backend.
package storetest
