// Package schema defines how doppel's metadata is laid out in meta.Store:
// typed, prefix-encoded keys and versioned binary records.
//
// Key layout (all integers big-endian so that keys sort numerically):
//
//	"\x00" + name             volume singletons: config, counters, stats
//	"i" + ino                 inode record
//	"d" + dir ino + name      directory entry: child ino and type
//	"p" + ino + parent + name parent back-reference (every path of an inode)
//	"e" + ino + offset        extent: file range -> part of a chunk
//	"x" + ino + name          extended attribute value
//	"k" + hash                chunk record: location, sizes, refcount
//	"j" + version + ino       change journal entry [+ name: a directory entry]
//	"J" + clone + version + ino  the same, again per clone, for diff
//	"q" + consumer name       journal cursor: oldest version it still needs
//	"o" + ino                 orphan: unlinked inode still open
//
// Every record starts with a format byte so that the encoding can evolve;
// decoders reject records they do not understand rather than guess.
//
// A chunk's name is its BLAKE3 hash, or, for a block written in place and
// not hashed yet, a provisional name made of its place and check
// (provisional.go).
package schema
