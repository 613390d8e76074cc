// Package filelock is the arithmetic of fcntl and flock locks that the
// volume keeps for several hosts (docs/SHARED.md, 9.4): which held lock
// stands in the way of a request, and what an owner holds after one.
// It knows nothing of owners, sessions or records; the namespace does.
//
//   - lock.go: Lock, overlap and conflict.
//   - apply.go: Apply, an owner's locks after a lock or unlock request.
//   - codec.go: Encode and Decode of an owner's locks (a record's value).
package filelock
