package fsck

import (
	"fmt"

	"github.com/doppelfs/doppel/internal/schema"
)

// Clones and snapshots add pins, retained old versions (with an index per
// pin), clone records and link maps. A retained extent references its
// chunk like a live one, so refcounts count both.

// scanVersions decodes pins, clone records, retained versions and their
// index, and counts the chunk references retained extents hold.
func (c *checker) scanVersions() error {
	pins := map[uint64]bool{}
	lo, hi := schema.PinRange()
	err := c.scan(lo, hi, func(k, v []byte) {
		pin, err := schema.PinVersion(k)
		if err == nil {
			_, err = schema.DecodePin(v)
		}
		if err != nil {
			c.report(KindDecode, noIno, "pin %s: %v", shortHex(k), err)
			return
		}
		pins[pin] = true
	})
	if err != nil {
		return err
	}
	lo, hi = schema.CloneRange()
	if err := c.scan(lo, hi, func(k, v []byte) {
		ino, err := schema.CloneIno(k)
		var rec schema.Clone
		if err == nil {
			rec, err = schema.DecodeClone(v)
		}
		switch {
		case err != nil:
			c.report(KindDecode, noIno, "clone record %s: %v", shortHex(k), err)
		case rec.Removed:
			// rmclone detached its tree, which the daemon is freeing;
			// its stubs may outlive the root.
			if c.inodes[ino] != nil {
				c.removedRoots = append(c.removedRoots, ino)
			}
		case c.inodes[ino] == nil:
			c.report(KindVersions, ino, "clone record of inode %d, which does not exist", ino)
		}
	}); err != nil {
		return err
	}
	lo, hi = schema.GoneRange()
	if err := c.scan(lo, hi, func(k, v []byte) {
		if _, err := schema.GoneIno(k); err != nil {
			c.report(KindDecode, noIno, "gone-clone record %s: %v", shortHex(k), err)
		} else if _, err := schema.DecodeClone(v); err != nil {
			c.report(KindDecode, noIno, "gone-clone record %s: %v", shortHex(k), err)
		}
	}); err != nil {
		return err
	}
	if err := c.scan([]byte{'h'}, []byte{'h' + 1}, func(k, v []byte) {
		ino, err := schema.ParseU64(v)
		if err != nil || len(k) != 25 {
			c.report(KindDecode, noIno, "link map entry %s: malformed", shortHex(k))
			return
		}
		c.linkMapped[ino] = true
	}); err != nil {
		return err
	}
	if err := c.scan([]byte{'H'}, []byte{'H' + 1}, func(k, v []byte) {
		if _, err := schema.ParseU64(v); err != nil || len(k) != 25 {
			c.report(KindDecode, noIno, "directory map entry %s: malformed", shortHex(k))
		}
	}); err != nil {
		return err
	}
	indexed := map[string]bool{}
	if err := c.scan([]byte{'R'}, []byte{'R' + 1}, func(k, _ []byte) {
		key, err := schema.RetainIndexKeyOf(k)
		if err != nil || len(k) < 9 {
			c.report(KindDecode, noIno, "retained-version index key %s: malformed", shortHex(k))
			return
		}
		indexed[string(schema.RetainedKey(key, be64(k[1:9])))] = true
	}); err != nil {
		return err
	}
	lo, hi = schema.RetainedRange()
	err = c.scan(lo, hi, func(k, v []byte) {
		key, pin, err := schema.ParseRetainedKey(k)
		var rv schema.Retained
		if err == nil {
			rv, err = schema.DecodeRetained(v)
		}
		if err != nil {
			c.report(KindDecode, noIno, "retained version %s: %v", shortHex(k), err)
			return
		}
		c.rep.Retained++
		owner := schema.OwnerIno(key)
		if !pins[pin] {
			c.report(KindVersions, owner, "retained version of key %s for pin %d, which does not exist", shortHex(key), pin)
		}
		if !indexed[string(k)] {
			c.report(KindVersions, owner, "retained version of key %s for pin %d is missing from the pin's index", shortHex(key), pin)
		}
		delete(indexed, string(k))
		if key[0] == 'e' && rv.Present {
			c.retainedExtent(owner, rv.Value)
		}
	})
	for k := range indexed {
		c.report(KindVersions, noIno, "the index of retained versions names %s, which does not exist", shortHex([]byte(k)))
	}
	return err
}

// retainedExtent counts the chunk reference of a retained extent.
func (c *checker) retainedExtent(ino uint64, v []byte) {
	x, err := schema.DecodeExtent(v)
	if err != nil {
		c.report(KindDecode, ino, "retained extent of inode %d: %v", ino, err)
		return
	}
	if x.Owned {
		// A retained copy never owns its bytes (schema.Unowned): the
		// live extent, or a record at their place, does.
		c.report(KindVersions, ino, "a retained extent of inode %d owns segment %d offset %d", ino, x.Hint.Segment, x.Hint.Offset)
	}
	if ch := c.chunks[x.Hash]; ch != nil {
		ch.refs++
	} else {
		c.report(KindMissingChunk, ino, "%s", fmt.Sprintf("a retained extent of inode %d names chunk %x, which has no record", ino, x.Hash[:8]))
	}
}
