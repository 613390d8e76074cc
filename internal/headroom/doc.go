// Package headroom keeps free space on the host file system of a store for
// the metadata store.
//
// Pebble, the metadata store, cannot survive a failed write to its log:
// it stops for good (see internal/meta). So doppel stops accepting new
// data while a reserve is still free, and keeps most of that reserve for
// operations that only add metadata. Deleting never needs permission: the
// reserve is what lets deletes, and the space they give back, go through
// on a full disk.
//
//	free space (for unprivileged users)   what is refused (ENOSPC)
//	>= reserve + n                         nothing
//	<  reserve + n                         storing n bytes of new data
//	<  reserve / 2                         also creating names and xattrs
//
// The reserve is 16 MiB, enough for Pebble to rotate its log and flush a
// memtable, plus 1/8 of the metadata store's size for its compactions.
package headroom
