// Package fusefs serves a vfs.FS to the kernel through FUSE (go-fuse's raw
// protocol API). FUSE node IDs are doppel inode numbers, which are stable
// and never reused, so the frontend keeps no inode table of its own.
package fusefs
