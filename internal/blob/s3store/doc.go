// Package s3store is a blob.Store that keeps chunk bytes in an
// S3-compatible object store, packed into immutable objects of a few MiB:
// a pack object is a segment, and a Loc{Segment, Offset, Length} names
// bytes [Offset, Offset+Length) of object PREFIX/packs/XXXXXXXX (Segment
// as 8 hex digits). docs/SHARED.md, section 8, is the design.
//
// Chunks are copied into the open pack in memory (a streaming writer's
// run of them becomes a pack of its own, uploaded from the writer's
// memory: lend.go); a full pack is sealed
// and uploaded with one PUT in the background; Sync seals the open pack
// and returns only once every pack sealed before it is in the object
// store (ordered mode: data before the metadata naming it). Reads come
// from memory (packs not uploaded yet, prefetched ranges), a bounded
// local cache on disk, or ranged GETs. Objects
// cannot be punched: freed spans are recorded as dead, and a pack that is
// all dead is deleted.
//
// Files:
//
//   - config.go: Config, its defaults, ParseURL (s3://BUCKET/PREFIX?endpoint=&region=).
//   - creds.go: Credentials (never formatted), LoadCredentials (environment or credentials file).
//   - client.go: the S3 calls (aws-sdk-go-v2, path-style, checksums only when required) and their errors.
//   - alloc.go: Allocator, which hands out pack numbers, and LocalAllocator.
//   - store.go: Store, Open, Close, Segments, SessionStart, Usage.
//   - put.go: packs in memory, Put, PutMany, StartPutMany, sealing.
//   - lend.go: blob.Lender: a batch lying back to back in the caller's
//     memory as a pack of its own, without a copy.
//   - align.go: blob.Aligner: chunks back to back (Config.Unpadded) or
//     at 4 KiB boundaries; the spans and checks of locations that follow.
//   - packmem.go: the memory packs are filled in (an anonymous mapping
//     where there is one, outside the Go heap).
//   - wholebody.go: the HTTP client that writes a pack's body to the
//     socket with one write.
//   - upload.go: uploads with retries, Sync.
//   - read.go: Read, Forget.
//   - prefetch.go: Prefetch, PrefetchStream: ranged GETs into memory
//     (staging, bounded by Config.PrefetchBytes), read from there and
//     written to the cache (of a long sequential stream, only its head);
//     a stream's last range of a pack goes on to the pack's end, and
//     reads take its bytes as they arrive.
//   - bufpool.go: the pool of prefetch buffers, in size classes.
//   - cache.go: the local read cache: its index, gets, puts, promotion of
//     records read again (checked by an XXH3 per 64 KiB block).
//   - cache_ring.go: the cache's ring of slab files on disk (layout, scan
//     at open, O_DIRECT writes at the head).
//   - free.go: Free, Reclaim and the deletion of dead packs.
//   - compact.go: blob.Compactable: sparse packs, whole-pack reads,
//     retirement (deletion after RetireGrace), relisting, dead bytes.
//   - ledger.go: the dead spans of each pack, kept by a DeadStore (a
//     shared volume's metadata store, or the file "dead" of the store
//     directory).
//   - inspect.go: blob.Inspector, what fsck asks about packs.
//   - gone.go: blob.GoneTeller, the packs known to be deleted (location
//     hints into them are passed over).
//
// The local store directory (Config.Dir, mode 0700, locked while open)
// holds: next (the LocalAllocator's highest pack number, 8 hex digits;
// absent with another Allocator), dead (the ledger's records, absent with
// another DeadStore) and cache/ (the slab files slab-NNNN of cached
// ranges of packs). It is a cache: losing it loses no data.
package s3store
