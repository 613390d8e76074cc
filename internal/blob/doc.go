// Package blob stores chunk bytes. The embedded store keeps append-only
// segment files in which every chunk starts on a 4 KiB boundary, so that a
// freed chunk's blocks can be returned to the host file system at once by
// punching a hole (FreeMany punches chunks that lie side by side as one
// range: freemany.go); a sealed segment with no data left is deleted. Freed
// one-block chunks may instead be pooled and written over by new one-block
// chunks (slots.go), which costs a write instead of a punch and an append.
// A chunk nothing else needs may be written over where it lies
// (overwrite.go: the content layer's disk image blocks).
//
// The blob store knows nothing of hashes, files or refcounts: it hands out
// locations and gives bytes back for them. The content layer above decides
// what is live. Checksums, if wanted, belong to that layer too: a hole or a
// torn write inside a segment's length reads back as zeros, undetected here.
//
// Every backend passes the conformance suite in blob/storetest
// (conformance_test.go runs it for Dir, in both write modes).
//
// # On-disk format
//
// A store is one directory (mode 0700) holding:
//
//   - seg-XXXXXXXX: segment files, XXXXXXXX being the segment number
//     (>= 1) as 8 lower-case hex digits, e.g. seg-0000002a for segment 42.
//     A segment is raw chunk bytes with no header, footer or index: chunk
//     Loc{Segment, Offset, Length} is bytes [Offset, Offset+Length) of its
//     file, and Offset is a multiple of Align (4096). The padding up to the
//     next Align boundary holds zeros or is a hole (direct writes write
//     it, buffered ones do not), so it costs no space beyond the chunk's
//     last block; freed chunks are punched out as holes. A segment
//     is sealed once the next chunk would take it past Options.SegmentSize
//     (256 MiB by default); a chunk larger than that goes alone into a
//     fresh segment.
//   - next: the highest segment number ever used, as 8 hex digits and a
//     newline, replaced atomically (via next.tmp and rename) and synced
//     before a segment of that number is created. Numbers are never
//     reused, even after their segment was deleted.
//   - next.tmp: a leftover of an interrupted update of next; removed on open.
//
// Other files in the directory are ignored. OpenDir takes an exclusive
// flock on the directory, deletes segments holding no data (lseek
// SEEK_DATA finds none) and appends only to new segments, never after the
// possibly torn tail of an old one.
package blob
