// Package fsck checks the consistency of a doppel volume and repairs it.
//
// Check (an unmounted volume) and CheckLive (a volume in use, through its
// content engine) read one metadata snapshot and the segment files, and
// report each broken invariant as a Problem with a stable Kind:
//
//   - content: every chunk's refcount equals the number of extents naming
//     it; every extent names an existing chunk and lies inside it; the
//     extents of a file do not overlap and end at or before its size; each
//     inode's mapped bytes equal the sum of its extent lengths;
//   - chunk store: every chunk lies inside an existing segment, chunks do
//     not overlap, and (with VerifyData) every chunk decompresses to bytes
//     whose BLAKE3 hash is its name. Segment blocks that hold data but no
//     live chunk, and freed chunks not punched yet, are reported as
//     reclaimable space, not as damage: a crash leaves them behind;
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
// Online, the snapshot is consistent but chunk data of transactions in
// flight is in the running session's segments, which no snapshot
// describes: orphan space is looked for only in segments of earlier
// sessions (below blob.Store.SessionStart). The reclaimer is held for the
// duration of the check (content.Engine.HoldReclaim), so no chunk the
// snapshot names is punched under it.
//
// While checking, the checker also plans the repair of what it finds
// (plan.go). Repair applies the plan to an unmounted volume, each change
// one transaction of a content engine it opens on the stores, then checks
// again (repair*.go). RepairLive applies the safe subset to a volume in
// use: refcounts and the stats record, corrected by the difference
// counted (which later transactions leave unchanged), and orphan space of
// earlier sessions. docs/FSCK.md describes both for users.
//
// The checker keeps maps keyed by inode number and by chunk hash in
// memory, which is fine for volumes of millions of files. A streaming
// design (sorted external runs merged against the key order) for much
// larger volumes is future work.
package fsck
