// Package fsck checks the consistency of an unmounted doppel volume. It
// only reads: nothing is repaired or changed.
//
// Check walks every metadata record (inodes, directory entries and their
// parent back-references, extents, xattrs, chunk records, orphan markers,
// the journal and the singletons) and the segment files, and reports each
// broken invariant as a Problem with a stable Kind:
//
//   - content: every chunk's refcount equals the number of extents naming
//     it; every extent names an existing chunk and lies inside it; the
//     extents of a file do not overlap and end at or before its size; each
//     inode's mapped bytes equal the sum of its extent lengths;
//   - chunk store: every chunk lies inside an existing segment, chunks do
//     not overlap, and (with VerifyData) every chunk decompresses to bytes
//     whose BLAKE3 hash is its name. Segment blocks that hold data but no
//     live chunk are reported as reclaimable space, not as damage: a crash
//     between a chunk write and its metadata commit leaves them behind;
//   - tree: every entry names an existing inode of the type it records and
//     has its back-reference, and every back-reference its entry; every
//     inode but the root and orphans is reachable from the root; link
//     counts match the entries; a directory has exactly one parent;
//   - counters: the stats record equals the recomputed totals;
//   - records: every record decodes. A record that does not is reported
//     and skipped; it never stops the check.
//
// Problems name a path of the affected inode, found through parent
// back-references, or "<inode N>" when it has none.
//
// Check keeps maps keyed by inode number and by chunk hash in memory, which
// is fine for volumes of millions of files. A streaming design (sorted
// external runs merged against the key order) for much larger volumes is
// future work.
package fsck
