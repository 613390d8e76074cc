// Package storetest is the conformance suite every blob.Store backend
// passes (restic's internal/backend/test is the model): Run takes a way to
// open the backend and runs the same tests against it.
//
// Files:
//
//   - suite.go: Run, the Opener, and the helpers the tests share.
//   - putread.go: puts, batches and reads, their edge cases and errors.
//   - lifecycle.go: close and reopen, sessions, freeing and reclaiming,
//     hints, and a concurrent churn.
//
// What a backend does beyond the interface (how the segment store punches
// holes and deletes segment files, its direct writes and write failures)
// is tested beside the backend.
//
// The suite speaks of segments; for the S3 store (blob/s3store) a segment
// is a pack object. Nothing in it depends on how a backend returns space
// (punched holes or deleted objects) beyond what both do: freeing never
// grows the usage, and a segment with nothing live left goes away.
package storetest
