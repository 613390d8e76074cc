package fsck

import (
	"fmt"
	"slices"
	"strings"
)

// Severities of problems.
const (
	// SeverityError is damage: data or metadata that is wrong or missing.
	SeverityError = "error"
	// SeverityReclaimable is space held by nothing: harmless, and freed by
	// a future repair or garbage collection.
	SeverityReclaimable = "reclaimable"
)

// Problem kinds. They are stable identifiers: scripts may match on them.
const (
	KindDecode            = "decode-error"         // a record does not decode
	KindUnknownKey        = "unknown-key"          // a key with an unknown prefix
	KindMissingRoot       = "missing-root"         // no root directory
	KindInoBeyondNext     = "ino-beyond-next"      // inode number not below the next_ino counter
	KindDanglingDirent    = "dangling-dirent"      // entry names a missing inode
	KindDirentNotInDir    = "dirent-not-in-dir"    // entry of a missing inode or of a non-directory
	KindDirentType        = "dirent-type-mismatch" // entry's type differs from its inode's
	KindMissingParentRef  = "missing-parent-ref"   // entry without back-reference
	KindDanglingParentRef = "dangling-parent-ref"  // back-reference without entry
	KindUnreachable       = "unreachable-inode"    // not reachable from the root, not an orphan
	KindBadOrphan         = "bad-orphan"           // orphan marker of a missing or linked inode
	KindNlink             = "nlink-mismatch"       // link count differs from the entries
	KindDirParents        = "dir-multiple-parents" // directory named by more than one entry
	KindDanglingExtent    = "dangling-extent"      // extent of a missing inode
	KindExtentNotFile     = "extent-not-file"      // extent of a non-regular inode
	KindExtentOverlap     = "extent-overlap"       // extents of one inode overlap
	KindExtentPastEOF     = "extent-past-eof"      // extent ends beyond the file size
	KindExtentPastChunk   = "extent-past-chunk"    // extent reaches past its chunk's end
	KindMissingChunk      = "missing-chunk"        // extent names a chunk with no record
	KindMapped            = "mapped-mismatch"      // inode's mapped bytes differ from its extents
	KindDanglingXattr     = "dangling-xattr"       // xattr of a missing inode
	KindRefcount          = "refcount-mismatch"    // chunk refcount differs from its extents
	KindBadLocation       = "bad-location"         // chunk location no store can have given
	KindMissingSegment    = "missing-segment"      // chunk in a segment that does not exist
	KindShortChunk        = "short-chunk"          // chunk reaches past its segment's end
	KindChunkOverlap      = "chunk-overlap"        // two chunks share segment bytes
	KindBadHash           = "bad-hash"             // chunk bytes do not match their hash
	KindBadCheck          = "bad-check"            // chunk record's check does not match its (intact) bytes
	KindReadError         = "read-error"           // chunk bytes cannot be read (I/O error)
	KindOrphanSpace       = "orphan-chunk-space"   // segment data no chunk uses (reclaimable)
	KindPendingFree       = "pending-free"         // a freed chunk not punched yet (reclaimable)
	KindCloneHeld         = "clone-held"           // a clone's hard-linked file with no name left, freed with the clone (reclaimable)
	KindFreeOverlap       = "free-overlaps-chunk"  // a pending free would punch a live chunk
	KindStats             = "stats-mismatch"       // stats record differs from the totals
	KindVersions          = "versions"             // pins, retained versions or clone records disagree
	KindOwnedTwice        = "owned-twice"          // two extents own one block
)

// Problem is one broken invariant.
type Problem struct {
	Kind     string `json:"kind"`
	Severity string `json:"severity"`
	// Path is a path of the affected inode when there is one, "" otherwise.
	Path   string `json:"path"`
	Detail string `json:"detail"`
}

func (p Problem) String() string { return p.Kind + "\t" + p.Path + "\t" + p.Detail }

// Report is the result of a check.
type Report struct {
	Problems    []Problem `json:"problems"`
	Inodes      int64     `json:"inodes"`
	Directories int64     `json:"directories"`
	Files       int64     `json:"files"`
	Extents     int64     `json:"extents"`
	// HintedExtents carry their chunk's location as a hint; StaleHints of
	// them name another place than the chunk's record. A stale hint is no
	// damage: reads verify it and fall back to the record.
	HintedExtents int64 `json:"hinted_extents"`
	StaleHints    int64 `json:"stale_hints"`
	// OwnedBlocks are blocks an extent owns, with no chunk record
	// (docs/BLOCK.md, "Owned blocks").
	OwnedBlocks int64 `json:"owned_blocks"`
	// UnsettledBlocks are owned blocks in zones an intent record names:
	// written in place before a crash, their bytes are not verified (the
	// next open of the volume takes them as it finds them).
	UnsettledBlocks int64 `json:"unsettled_blocks,omitempty"`
	Retained        int64 `json:"retained_versions"`
	Chunks          int64 `json:"chunks"`
	Segments        int64 `json:"segments"`
	BytesVerified   int64 `json:"bytes_verified"` // stored chunk bytes read and hashed
	// ReclaimableBytes is segment space holding data that no chunk uses.
	ReclaimableBytes int64 `json:"reclaimable_bytes"`
	// Online: the volume was in use. Orphan space is then looked for only
	// in segments of earlier sessions, and pending frees are not reported.
	Online bool `json:"online"`
}

// Errors counts the problems that are damage (not reclaimable space).
func (r *Report) Errors() int {
	n := 0
	for _, p := range r.Problems {
		if p.Severity != SeverityReclaimable {
			n++
		}
	}
	return n
}

// Clean reports whether the volume has no damage. Reclaimable space does
// not count.
func (r *Report) Clean() bool { return r.Errors() == 0 }

// Kinds returns the distinct kinds reported, sorted.
func (r *Report) Kinds() []string {
	var ks []string
	for _, p := range r.Problems {
		if !slices.Contains(ks, p.Kind) {
			ks = append(ks, p.Kind)
		}
	}
	slices.Sort(ks)
	return ks
}

// noIno marks a problem that concerns no inode.
const noIno = 0

// pending is a problem whose path is resolved once back-references are known.
type pending struct {
	Problem
	ino  uint64
	name string // entry of directory ino the problem is about, if any
}

func (c *checker) report(kind string, ino uint64, format string, args ...any) {
	c.reportSev(kind, SeverityError, ino, format, args...)
}

func (c *checker) reportSev(kind, sev string, ino uint64, format string, args ...any) {
	c.problems = append(c.problems, pending{Problem{Kind: kind, Severity: sev, Detail: fmt.Sprintf(format, args...)}, ino, ""})
}

// finish resolves paths and sorts the problems by kind, path and detail.
func (c *checker) finish() {
	c.rep.Problems = make([]Problem, 0, len(c.problems))
	for _, p := range c.problems {
		p.Path = c.entryPath(p.ino, p.name)
		c.rep.Problems = append(c.rep.Problems, p.Problem)
	}
	slices.SortStableFunc(c.rep.Problems, func(a, b Problem) int {
		if x := strings.Compare(a.Kind, b.Kind); x != 0 {
			return x
		}
		if x := strings.Compare(a.Path, b.Path); x != 0 {
			return x
		}
		return strings.Compare(a.Detail, b.Detail)
	})
}

// entryPath is a path of ino, or of its entry name if name is set; "" for
// noIno.
func (c *checker) entryPath(ino uint64, name string) string {
	p := ""
	if ino != noIno {
		p = c.pathOf(ino)
	}
	if name != "" {
		p = strings.TrimSuffix(p, "/") + "/" + name
	}
	return p
}
