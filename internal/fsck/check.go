package fsck

import (
	"errors"
	"fmt"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/volume"
)

// Options tune a check.
type Options struct {
	// VerifyData reads every chunk, decompresses it and compares its
	// BLAKE3 hash with its name. Without it, chunk locations are checked
	// against the segment files' sizes only.
	VerifyData bool
	// Progress, if set, is called now and then during the chunk pass with
	// the stored bytes checked so far and the stored bytes of all chunks.
	Progress func(done, total int64)
}

// checker holds the state of one run.
type checker struct {
	v        *volume.Volume
	opt      Options
	rep      Report
	problems []pending

	nextIno uint64        // the next_ino counter; 0 if unknown
	stats   *schema.Stats // the stats record; nil if missing or bad
	freed   []blob.Loc    // pending frees (free records)

	inodes   map[uint64]*inode
	refs     map[uint64][]parentRef // back-references by inode
	children map[uint64][]uint64    // directory -> inodes its entries name
	chunks   map[schema.Hash]*chunk
	logical  int64 // sum of all extent lengths

	// damaged maps chunks found damaged in the chunk store to what is
	// wrong; every file using one is reported.
	damaged map[schema.Hash][]damage
}

// Check checks the volume v, which must not be in use by anything else
// (not mounted, not written to during the check). It needs only v.Dir,
// v.Meta and v.Blobs: the content engine and namespace may be absent, so
// that a damaged volume can be checked without opening it for writing.
//
// Problems found are in the report; the error is for failures that stop
// the check (an unreadable metadata store, an I/O error on the store
// directory).
func Check(v *volume.Volume, opt Options) (*Report, error) {
	if v == nil || v.Meta == nil || v.Blobs == nil {
		return nil, errors.New("fsck: volume is not open")
	}
	c := &checker{
		v: v, opt: opt,
		inodes:   map[uint64]*inode{},
		refs:     map[uint64][]parentRef{},
		children: map[uint64][]uint64{},
		chunks:   map[schema.Hash]*chunk{},
		damaged:  map[schema.Hash][]damage{},
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
		{"xattrs", c.scanXattrs},
		{"journal", c.scanJournal},
		{"free records", c.scanFree},
		{"unknown keys", c.scanUnknown},
		{"chunk store", c.checkBlobs},
		{"refcounts", c.checkRefs},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			return nil, fmt.Errorf("fsck: %s: %w", s.name, err)
		}
	}
	c.checkTree()
	c.checkStats()
	c.finish()
	return &c.rep, nil
}

// scan calls fn for every key in [lower, upper). Key and value are valid
// during the call only.
func (c *checker) scan(lower, upper []byte, fn func(k, v []byte)) error {
	it, err := c.v.Meta.NewIter(lower, upper)
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		fn(it.Key(), it.Value())
	}
	return it.Close()
}
