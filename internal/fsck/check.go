package fsck

import (
	"context"
	"errors"
	"fmt"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Stores are the parts of a volume a check reads.
type Stores struct {
	Dir   string // the volume directory; segment files are in Dir/chunks
	Meta  meta.Store
	Blobs blob.Store
}

// Options tune a check.
type Options struct {
	// VerifyData reads every chunk, decompresses it and compares its
	// BLAKE3 hash with its name. Without it, chunk locations are checked
	// against the segment files' sizes only.
	VerifyData bool
	// Progress, if set, is called now and then with how far the check is.
	Progress func(Progress)
}

// Progress says how far a check is.
type Progress struct {
	Phase string `json:"phase"` // PhaseMetadata or PhaseChunks
	Step  string `json:"step"`  // the records being read
	Done  int64  `json:"done"`  // records read, or stored chunk bytes checked
	Total int64  `json:"total"` // stored bytes of all chunks; 0 for the metadata walk
}

// Phases of a check.
const (
	PhaseMetadata = "metadata"
	PhaseChunks   = "chunks"
)

// checker holds the state of one run.
type checker struct {
	removedRoots []uint64 // roots of clones rmclone is freeing: their trees are reachable
	// linkMapped are hard-linked files of clones: names of theirs in
	// directories not materialized yet count in nlink without entries.
	linkMapped map[uint64]bool
	ctx        context.Context
	s          Stores
	r          meta.Reader // the view checked: a snapshot
	opt        Options
	online     bool   // the volume is in use (see CheckLive)
	align      int64  // where chunks start in segments (blob.AlignmentOf): spans are taken at it
	liveFrom   uint32 // online: segments from this number on are being written
	rep        Report
	problems   []pending
	step       string
	records    int64

	nextIno    uint64        // the next_ino counter; 0 if unknown
	stats      *schema.Stats // the stats record; nil if missing or bad
	version    uint64        // the version record; 0 if missing or bad
	maxVersion uint64        // highest version an inode or journal entry names
	badRecords [][]byte      // singletons, free records and journal entries that do not decode
	freed      []blob.Loc    // pending frees (free records)

	inodes   map[uint64]*inode
	refs     map[uint64][]parentRef // back-references by inode
	children map[uint64][]uint64    // directory -> inodes its entries name
	chunks   map[schema.Hash]*chunk
	owned    map[blob.Loc]ownedBlock // blocks owned by an extent, with no record (owned.go)
	// intents: zones of files blocks may have been written in place in
	// before a crash (schema.IntentKey), by inode and zone.
	intents map[[2]uint64]bool
	logical int64 // sum of all extent lengths
	maxIno  uint64

	// damaged maps chunks found damaged in the chunk store to what is
	// wrong; every file using one is reported.
	damaged map[schema.Hash][]damage
	live    map[uint32][]blob.Span // the spans chunk records occupy, by segment
	fix     plan                   // what a repair would change
}

// Check checks the volume whose stores s holds, which nothing else may
// write to (it is not mounted). It reads one metadata snapshot. It needs
// only the stores: a damaged volume is checked without opening it for
// writing.
//
// Problems found are in the report; the error is for failures that stop
// the check (an unreadable metadata store, an I/O error on the store
// directory).
func Check(s Stores, opt Options) (*Report, error) {
	c, err := check(context.Background(), s, opt, false)
	if err != nil {
		return nil, err
	}
	return &c.rep, nil
}

// CheckLive checks a volume that is in use, through the content engine
// writing to it, without stopping it. It reads one metadata snapshot and
// keeps freed chunks from being punched until it is done, so that what the
// snapshot names stays on disk. Chunk data written by transactions still
// in flight is in segments of the running session, which no snapshot can
// describe: orphan space is looked for only in segments written by earlier
// sessions, and pending frees are the reclaimer's normal work, not
// reported.
func CheckLive(ctx context.Context, s Stores, eng *content.Engine, opt Options) (*Report, error) {
	release := eng.HoldReclaim() // before the snapshot: nothing it names is punched
	defer release()
	c, err := check(ctx, s, opt, true)
	if err != nil {
		return nil, err
	}
	return &c.rep, nil
}

// check runs one check and returns the checker with its findings.
func check(ctx context.Context, s Stores, opt Options, online bool) (*checker, error) {
	if s.Meta == nil || s.Blobs == nil {
		return nil, errors.New("fsck: volume is not open")
	}
	snap := s.Meta.Snapshot()
	defer snap.Close()
	c := &checker{
		ctx: ctx, s: s, r: snap, opt: opt, online: online,
		inodes:     map[uint64]*inode{},
		linkMapped: map[uint64]bool{},
		refs:       map[uint64][]parentRef{},
		children:   map[uint64][]uint64{},
		chunks:     map[schema.Hash]*chunk{},
		owned:      map[blob.Loc]ownedBlock{},
		damaged:    map[schema.Hash][]damage{},
		live:       map[uint32][]blob.Span{},
		fix:        newPlan(),
		align:      blob.AlignmentOf(s.Blobs),
	}
	c.rep.Online = online
	if online {
		c.liveFrom = s.Blobs.SessionStart()
	}
	// Order matters: inodes, back-references and chunks are known before
	// the records that point at them are scanned.
	steps := []struct {
		name string
		run  func() error
	}{
		{"singletons", c.scanSingletons},
		{"inodes", c.scanInodes},
		{"orphans", c.scanOrphans},
		{"back-references", c.scanParents},
		{"directory entries", c.scanDirents},
		{"chunks", c.scanChunks},
		{"extents", c.scanExtents},
		{"versions", c.scanVersions},
		{"xattrs", c.scanXattrs},
		{"journal", c.scanJournal},
		{"free records", c.scanFree},
		{"unknown keys", c.scanUnknown},
		{"chunk store", c.checkBlobs},
		{"refcounts", c.checkRefs},
	}
	for _, st := range steps {
		c.step = st.name
		c.progress()
		if err := st.run(); err != nil {
			return nil, fmt.Errorf("fsck: %s: %w", st.name, err)
		}
	}
	c.checkTree()
	c.checkStats()
	c.finish()
	return c, nil
}

// scan calls fn for every key in [lower, upper). Key and value are valid
// during the call only. It stops early if the check is canceled.
func (c *checker) scan(lower, upper []byte, fn func(k, v []byte)) error {
	it, err := c.r.NewIter(lower, upper)
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		fn(it.Key(), it.Value())
		if c.records++; c.records%4096 == 0 {
			if err := c.ctx.Err(); err != nil {
				it.Close()
				return err
			}
			c.progress()
		}
	}
	return it.Close()
}

func (c *checker) progress() {
	if c.opt.Progress != nil {
		c.opt.Progress(Progress{Phase: PhaseMetadata, Step: c.step, Done: c.records})
	}
}
