// Package namespace implements vfs.FS on top of the content engine: inodes,
// directory entries with parent back-references, hard links, symlinks,
// xattrs, open files and their write buffers, and the change journal
// (journal*.go: per-clone entries, pruning below a floor, cursors).
//
// Locking: each inode has a striped lock (reads share it, writes and extent
// edits take it exclusively); metadata transactions are serialized by the
// content engine. Inode locks are always taken before a transaction begins,
// and two inode locks in stripe order, so they cannot deadlock.
package namespace
