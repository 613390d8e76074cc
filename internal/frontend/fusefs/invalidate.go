package fusefs

import "github.com/hanwen/go-fuse/v2/fuse"

// Invalidator tells the kernel to drop what it caches of inodes and names
// that other hosts changed (the namespace's Invalidator; docs/SHARED.md,
// 9.3): notify_inval_inode drops an inode's attributes and cached pages,
// notify_inval_entry a name's dentry. An inode or name the kernel does
// not know is no error: there is nothing to drop.
type Invalidator struct{ srv *fuse.Server }

// NewInvalidator returns the Invalidator of the mount srv serves.
func NewInvalidator(srv *fuse.Server) *Invalidator { return &Invalidator{srv} }

// InvalidateInode drops ino's attributes and cached pages.
func (i *Invalidator) InvalidateInode(ino uint64) { i.srv.InodeNotify(ino, 0, 0) }

// InvalidateEntry drops the kernel's entry of name in dir.
func (i *Invalidator) InvalidateEntry(dir uint64, name string) { i.srv.EntryNotify(dir, name) }
