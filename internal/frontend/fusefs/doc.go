// Package fusefs serves a vfs.FS to the kernel through FUSE (go-fuse's raw
// protocol API). FUSE node IDs are doppel inode numbers, which are stable
// and never reused, so the frontend keeps no inode table of its own.
//
//   - fs.go: the adapter, errno mapping, attributes and entries.
//   - dir.go, file.go: directory and file operations.
//   - locks.go: fcntl and flock locks, forwarded to the volume when it
//     keeps them (several hosts); else the kernel keeps them.
//   - killpriv.go: dropping setuid/setgid on write.
//   - invalidate.go: telling the kernel what other hosts changed.
//   - track.go: counting and logging requests.
package fusefs
