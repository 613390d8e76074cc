// Package namespace implements vfs.FS on top of the content engine: inodes,
// directory entries with parent back-references, hard links, symlinks,
// xattrs, open files and their write buffers, clones and their pins, and
// the change journal.
//
// Locking: each inode has a striped lock (reads share it, writes and extent
// edits take it exclusively); metadata transactions are serialized by the
// content engine. Inode locks are always taken before a transaction begins,
// and two inode locks in stripe order, so they cannot deadlock.
//
// Files, by part:
//
// The volume and its records
//   - volume.go: Open, Close, InitRoot, begin; the background goroutines.
//   - inode.go: loading, saving, allocating and deleting inodes; GetAttr.
//   - entries.go, backrefs.go, xattr_records.go, clone_records.go,
//     clone_maps.go: the records of directory entries, names (back-
//     references), extended attributes, clones and the clones' link and
//     directory maps. Only these files (with inode.go, orphan.go, the
//     journal's files and usage.go, which measures records) know keys.
//   - resolve.go: paths to inodes and back (pathOf), flushing below a path.
//   - locks.go: the striped inode locks.
//   - errors.go: errno mapping, logging of failures, record decoding.
//   - counters.go: Counters (open files, dirty bytes).
//   - statfs.go: StatFS.
//
// POSIX operations
//   - dir.go: lookup, create, mkdir, mknod, symlink, link, unlink, rmdir.
//   - rename.go: rename, exchange and no-replace.
//   - attr.go: setattr (chmod, chown, truncate, utimes).
//   - attr_held.go: attribute changes held with an open file's buffered
//     writes and committed with them.
//   - xattr.go: extended attributes.
//   - fallocate.go: fallocate's modes and ext4's rules for them.
//   - data.go: lseek (SEEK_DATA/SEEK_HOLE) and copy_file_range.
//   - orphan.go: open-but-unlinked files left by a crash.
//   - open_records.go: files open on other hosts (records per session, so
//     that an unlink elsewhere keeps them; docs/SHARED.md 9.5).
//   - other_hosts.go: other hosts' changes read from the journal and told
//     to the frontend (kernel invalidation, 9.3), by the listener and
//     before every open (close-to-open).
//   - file_locks.go: fcntl and flock locks kept by the volume when
//     several hosts mount it (records per session and lock owner, 9.4).
//   - policy.go: the chunking policy of a file (xattr, inherited).
//
// The write path
//   - file.go: open, read, write, flush, fsync, release.
//   - file_block.go: what a block export asks beyond that: reads at a fixed
//     size, the host's page cache kept.
//   - flush.go: committing buffered writes (content.Engine.CommitChunks),
//     the background flusher.
//   - stream.go: a large sequential run cut and committed in the
//     background while the writer goes on, up to three commits of a
//     file in flight (a pipeline, committed in order).
//   - ingest.go, ingest_read.go: CreateFile, the importer's path: a whole
//     file read, cut and committed without the write buffer.
//
// Clones and pins
//   - clone.go, clone_path.go: making a clone (a pin and a stub root).
//   - stub.go, stub_dir.go: stubs, materializing them on first change;
//     exclusions applied as directories are materialized.
//   - materializer.go: the background materializer.
//   - clones.go: listing and removing clones.
//   - reaper.go: freeing a removed clone's tree in the background.
//   - pins.go: releasing pins and their retained versions; the exclusions
//     a pin's retainer applies.
//   - pin_reads.go: the RCU-like guard of reads through pins.
//   - link_count.go, link_names.go, link_stub.go, link_walk.go: link counts of
//     hard-linked files seen through clones of clones.
//
// The change journal
//   - journal_trees.go: which clones' journals a change goes to, and the
//     per-inode cache of that answer.
//   - journal_prune.go: the pruner and the journal floor.
//   - journal_compact.go: below the retention window, only the newest
//     entry of each live inode and name is kept (what diffs need).
//   - journal_cursor.go: consumer cursors.
//
// Inspection
//   - view.go: vnodes, the volume as a reader sees it through stubs.
//   - diff.go, diff_journal.go: diff, by walking or from the journal.
//   - scan.go: scan's groups of files by content.
//   - read_view.go: CopyFile, a file's content read through pins.
//   - usage.go: df of a subtree.
//   - file_stat.go: stat of a file's extents and chunks.
package namespace
