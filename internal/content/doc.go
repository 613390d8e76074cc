// Package content turns file data into deduplicated chunks and back.
//
// A file's content is an extent map (file offset -> part of a chunk) kept in
// meta.Store; chunks are named by BLAKE3-256 and stored once in blob.Store.
// The chunk table (hash -> location, sizes, refcount) is also the dedup
// index. Writes are buffered per file (Buffer), cut by a chunker, hashed and
// stored outside the metadata lock (Prepare), then committed together with
// the extent edits in one metadata batch (Tx). A chunk whose refcount drops
// to zero is freed: after the batch that dropped it is durable, its bytes are
// punched out of the segment file by the reclaimer.
//
// An extent over a whole uncompressed chunk also carries the chunk's
// location and check as its write found them (hints.go): verified reads
// of such extents skip the chunk record, and fall back to it when the
// hint has gone stale.
//
// A new block of a disk image (a file cut in 4 KiB blocks) is written
// owned (owned.go): its extent holds its place and check and the chunk
// table gets no record, so overwriting it reads and deletes none; a copy
// gives it a record at its place. Dedup of owned blocks runs after the
// fact, in the background (owned_dedup.go; when, owned_dedup_loop.go). An owned block nothing else
// references is written over in place by the transaction that commits
// its new bytes (inplace.go), after a durable intent record for its
// zone (intents.go); recovery takes the blocks of zones with intent
// records as it finds them (inplace_recover.go). Where the volume allows
// it, such a block is not hashed on the write's path: its extent gets a
// provisional name (its place and check) until the dedup pass hashes it
// (provisional.go). A stream's old extents,
// read to plan those writes, serve its transaction too while no commit
// changed them where it read (extent_plan.go keeps recent changes by
// range).
//
// Chunks are hashed together, sixteen 1 KiB pieces at a time (hash.go,
// over package blockhash): runs of 4 KiB chunks, and runs of longer ones.
//
// Dedup lookups of new chunks are answered by a filter of every hash the
// chunk table holds, where this process alone writes the table
// (dedupfilter.go); the commit's own check of records created since the
// lookup (created.go) keeps a filter built late or replaced safe.
//
// Sequential readers get readahead (readahead.go): the chunks beyond the
// read are looked up and their bytes asked for ahead of time, unless the
// window's data lies in file order in one segment file (inorder.go),
// which the host's own readahead serves, or is in memory already.
//
// The extents that sequential reads and the readahead scan are kept as
// extent windows (extent_window_cache.go), dropped for an inode by every
// commit that changes its extents, so that the reads after them do not
// scan the store again: on PostgreSQL each scan is a round trip the read
// waits for. A file a block export serves has its whole extent map in
// memory instead (extent_map.go; extent_map_pages.go holds it), loaded
// once and changed by every commit as it changes the store, so that a
// random read looks nothing up. An engine whose store other processes
// write (Config.OtherWriters) keeps neither.
//
// Stores that cannot punch (blob.Compactable: pack objects in S3) only
// mark a freed chunk's span dead; the compactor (compact.go: the pass and
// its background loop; compact_move.go: moving live chunks without racing
// the write path; compact_scan.go: the chunk table walks and the orphan
// sweep) rewrites packs that fell sparse and sweeps packs nothing names.
//
// On a store several hosts write at once (meta.TxLocker: PostgreSQL),
// each transaction holds the volume's transaction lock, and one that finds
// other hosts' commits drops what this engine kept of the volume first
// (foreign.go; docs/SHARED.md, section 9); background work runs only
// under its lease (meta.Leaser).
//
// Files: engine.go (Config, New, Sync, Close), tx.go (Tx: one metadata
// transaction), commit.go and writeranges.go (cut chunks to committed
// extents), prepare.go (cutting, hashing and storing: Prepared), hash.go,
// inline.go (chunks kept in their records), compress.go, writebuf.go and
// bufpool.go (the per-file write buffer), loan.go (a run's memory lent
// to the blob store while it uploads from it), extents.go (the extent map),
// read.go (ReadAt), chunk_load.go (loading and verifying one chunk;
// ChunkError), seek.go (SEEK_DATA/SEEK_HOLE), locs.go and cache.go (chunk
// locations and bytes kept in memory), readahead.go, inorder.go,
// hostcache.go, hints.go, owned.go, owned_dedup.go and owned_dedup_loop.go
// (owned blocks and their dedup), inplace.go, intents.go, inplace_recover.go and
// extent_plan.go (owned blocks written over in place), provisional.go
// (blocks written in place, named later),
// extent_window_cache.go, extent_map.go and extent_map_pages.go,
// dedupfilter.go and
// created.go (dedup lookups), clonecopy.go (clones), usage.go (reference
// tallies), reclaim.go (freeing space), recover.go and repair.go (after a
// crash; fsck), journal.go and retain.go (what a transaction changed, for
// diff and pins), compact*.go, foreign.go (other hosts' commits),
// counters.go (metrics).
package content
