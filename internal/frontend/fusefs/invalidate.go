package fusefs

import "github.com/hanwen/go-fuse/v2/fuse"

// Invalidator tells the kernel to drop what it caches of inodes and names
// that other hosts changed (the namespace's Invalidator; docs/SHARED.md,
// 9.3): notify_inval_inode drops an inode's attributes, notify_inval_entry
// a name's dentry. An inode or name the kernel does
// not know is no error: there is nothing to drop.
type Invalidator struct{ srv *fuse.Server }

// NewInvalidator returns the Invalidator of the mount srv serves.
func NewInvalidator(srv *fuse.Server) *Invalidator { return &Invalidator{srv} }

// InvalidateInode drops ino's attributes. Its cached pages go when the
// kernel next reads the attributes and finds the size or mtime changed
// (AUTO_INVAL_DATA), in the reader's context. Dropping them here (an
// offset of 0) made the kernel wait in the daemon's write to /dev/fuse
// for page locks that a local writer holds while its WRITE waits for
// this daemon: a SIGKILL landing then left the daemon unkillable and the
// writer hung (seen once in TestMultiHostCrashLoop). A negative offset
// invalidates the attributes only.
func (i *Invalidator) InvalidateInode(ino uint64) { i.srv.InodeNotify(ino, -1, 0) }

// InvalidateEntry drops the kernel's entry of name in dir.
func (i *Invalidator) InvalidateEntry(dir uint64, name string) { i.srv.EntryNotify(dir, name) }
