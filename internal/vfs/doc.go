// Package vfs is doppel's dispatch interface: the handle-based operations a
// frontend (FUSE today; NFS loopback, NBD and the Go API later) calls. Errors
// are syscall.Errno values a frontend can pass to the kernel unchanged; any
// other error means an internal failure and is reported as EIO.
//
// Filters (read-only, audit, ...) wrap an FS and forward what they do not
// change.
//
// Files: vfs.go (FS, its optional capabilities such as BlockReader and
// FromWriter, and ReadBlockVia for file systems without it); vfs_test.go.
package vfs
