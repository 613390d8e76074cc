package fsck

import (
	"bytes"
	"fmt"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/filelock"
	"github.com/doppelfs/doppel/internal/schema"
)

// keyPrefixes are the first bytes of every key the schema defines, sorted.
var keyPrefixes = []byte{0x00, 'C', 'G', 'H', 'J', 'P', 'R', 'd', 'e', 'f', 'h', 'i', 'j', 'k', 'o', 'p', 'q', 'r', 'x'}

// scanSingletons decodes the volume's singleton records.
func (c *checker) scanSingletons() error {
	seen := map[string]bool{}
	err := c.scan([]byte{0}, []byte{1}, func(k, v []byte) {
		seen[string(k)] = true
		switch {
		case bytes.Equal(k, schema.KeyConfig):
			if _, err := schema.DecodeConfig(v); err != nil {
				c.report(KindDecode, noIno, "config record: %v", err)
			}
		case bytes.Equal(k, schema.KeyNextIno):
			n, err := schema.ParseU64(v)
			if err != nil {
				c.report(KindDecode, noIno, "next_ino record: %v", err)
			}
			c.nextIno = n
		case bytes.Equal(k, schema.KeyVersion):
			n, err := schema.ParseU64(v)
			if err != nil {
				c.report(KindDecode, noIno, "version record: %v", err)
			}
			c.version = n
		case bytes.Equal(k, schema.KeyStats):
			s, err := schema.DecodeStats(v)
			if err != nil {
				c.report(KindDecode, noIno, "stats record: %v", err)
				c.deleteEarly(KindDecode, k, "deleted the stats record, rewritten from the totals")
				return
			}
			c.stats = &s
		case bytes.Equal(k, schema.KeyOwnedUnshared):
			if _, err := schema.ParseU64(v); err != nil {
				c.report(KindDecode, noIno, "owned_unshared record: %v", err)
				c.deleteEarly(KindDecode, k, "deleted the owned_unshared record (the next dedup pass of owned blocks waits for new ones)")
			}
		case bytes.Equal(k, schema.KeyNextPack):
			if _, err := schema.ParseU64(v); err != nil {
				// Deleting it could hand out numbers of existing packs
				// again: the store also allocates above the highest it
				// lists, but a repair must not rely on that.
				c.report(KindDecode, noIno, "next_pack record: %v", err)
			}
		case bytes.HasPrefix(k, deadLo):
			if _, err := schema.DecodeDeadKey(k); err != nil {
				c.report(KindUnknownKey, noIno, "singleton key %q", k)
			} else if _, err := schema.DecodeSpans(v); err != nil {
				// A cache of what the chunk table implies: losing it
				// costs only space, which the orphan check reports.
				c.report(KindDecode, noIno, "dead-span record %x: %v", k, err)
				c.deleteEarly(KindDecode, k, "deleted a dead-span record that does not decode")
			}
		case bytes.HasPrefix(k, intentLo):
			// Where blocks may have been written in place before a crash:
			// the next open of the volume checks those zones and deletes
			// them (content's recoverIntents; fsck's own repair opens it).
			if ino, zone, err := schema.DecodeIntentKey(k); err != nil {
				c.report(KindUnknownKey, noIno, "singleton key %q", k)
			} else {
				if c.intents == nil {
					c.intents = map[[2]uint64]bool{}
				}
				c.intents[[2]uint64{ino, zone}] = true
			}
		case bytes.HasPrefix(k, openLo):
			// Open records of sessions (several hosts): a dead session's
			// are removed by the hosts, not by fsck.
			if _, _, err := schema.ParseOpenKey(k); err != nil {
				c.report(KindUnknownKey, noIno, "singleton key %q", k)
			}
		case bytes.HasPrefix(k, lockLo):
			// fcntl and flock locks of sessions (several hosts): a dead
			// session's are removed by the hosts. One that does not
			// decode is dropped (a lock is worth less than the check).
			if _, _, _, _, err := schema.ParseLockKey(k); err != nil {
				c.report(KindUnknownKey, noIno, "singleton key %q", k)
			} else if _, err := filelock.Decode(v); err != nil {
				c.report(KindDecode, noIno, "lock record %x: %v", k, err)
				c.deleteEarly(KindDecode, k, "deleted a lock record that does not decode")
			}
		case bytes.Equal(k, schema.KeyDataURL), bytes.Equal(k, schema.KeyHosts):
			// Only joining and opening a shared volume read them.
		case bytes.Equal(k, schema.KeySession):
			if _, err := schema.DecodeSession(v); err != nil {
				c.report(KindDecode, noIno, "session record: %v", err)
				c.deleteEarly(KindDecode, k, "deleted the session record (the next open starts a new session)")
			}
		case c.journalSingleton(k, v):
		default:
			c.report(KindUnknownKey, noIno, "singleton key %q", k)
		}
	})
	for _, k := range [][]byte{schema.KeyConfig, schema.KeyNextIno, schema.KeyVersion, schema.KeyStats} {
		if err == nil && !seen[string(k)] {
			c.report(KindDecode, noIno, "record %q is missing", k[1:])
		}
	}
	return err
}

// scanFree collects the free records: chunk space whose last reference is
// gone but that was not punched yet. Opening a volume punches them, so
// offline they are left only by a crash; online they are the reclaimer's
// work under way and not reported.
func (c *checker) scanFree() error {
	return c.scan([]byte{'f'}, []byte{'f' + 1}, func(k, v []byte) {
		seg, off, n, err := schema.DecodeFree(k, v)
		if err != nil {
			c.report(KindDecode, noIno, "free record %x: %v", k, err)
			c.deleteEarly(KindDecode, k, "deleted a free record that does not decode")
			return
		}
		c.freed = append(c.freed, blob.Loc{Segment: seg, Offset: off, Length: n})
	})
}

// scanXattrs checks that every xattr belongs to an existing inode.
func (c *checker) scanXattrs() error {
	lower, upper := []byte{'x'}, []byte{'x' + 1}
	return c.scan(lower, upper, func(k, v []byte) {
		name, err := schema.XattrName(k)
		if err != nil || len(k) < 9 {
			c.report(KindDecode, keyIno(k), "xattr key %x: malformed", k)
			c.deleteKey(KindDecode, noIno, k, "deleted a malformed xattr key")
			return
		}
		ino := be64(k[1:])
		if c.inodes[ino] == nil {
			c.report(KindDanglingXattr, ino, "xattr %q of inode %d, which does not exist", name, ino)
			c.deleteKey(KindDanglingXattr, ino, k, fmt.Sprintf("deleted xattr %q", name))
		}
	})
}

// scanUnknown reports keys whose prefix the schema does not define.
func (c *checker) scanUnknown() error {
	for i, p := range keyPrefixes {
		lower := []byte{p + 1}
		var upper []byte // the last gap is unbounded
		if i+1 < len(keyPrefixes) {
			upper = []byte{keyPrefixes[i+1]}
		}
		if upper != nil && bytes.Equal(lower, upper) {
			continue
		}
		err := c.scan(lower, upper, func(k, v []byte) {
			c.report(KindUnknownKey, noIno, "key %s", shortHex(k))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkStats compares the stats record with the recomputed totals.
func (c *checker) checkStats() {
	if c.stats == nil {
		return
	}
	want, s := c.counted(), c.stats
	for _, f := range []struct {
		name      string
		got, want int64
	}{
		{"logical bytes", s.LogicalBytes, want.LogicalBytes},
		{"physical bytes", s.PhysicalBytes, want.PhysicalBytes},
		{"raw bytes", s.RawBytes, want.RawBytes},
		{"chunks", s.Chunks, want.Chunks},
		{"owned blocks", s.OwnedBlocks, want.OwnedBlocks},
		{"inodes", s.Inodes, want.Inodes},
	} {
		if f.got != f.want {
			c.report(KindStats, noIno, "%s: recorded %d, counted %d", f.name, f.got, f.want)
		}
	}
}

// counted is what the stats record should hold, recounted.
func (c *checker) counted() schema.Stats {
	var want schema.Stats
	want.LogicalBytes = c.logical
	want.Inodes = int64(len(c.inodes))
	for _, ch := range c.chunks {
		if ch.bad {
			continue
		}
		want.Chunks++
		want.PhysicalBytes += int64(ch.rec.Stored)
		want.RawBytes += int64(ch.rec.Raw)
	}
	for _, b := range c.owned {
		want.PhysicalBytes += int64(b.length)
		want.RawBytes += int64(b.length)
		want.OwnedBlocks++
	}
	return want
}

// keyIno is the inode number a key of an inode's record starts with, or
// noIno if the key is too short to hold one.
func keyIno(k []byte) uint64 {
	if len(k) < 9 {
		return noIno
	}
	return be64(k[1:])
}

func be64(b []byte) uint64 {
	var n uint64
	for _, x := range b[:8] {
		n = n<<8 | uint64(x)
	}
	return n
}

// shortHex prints a key for a message, cut to a readable length.
func shortHex(k []byte) string {
	if len(k) > 40 {
		return fmt.Sprintf("%x...", k[:40])
	}
	return fmt.Sprintf("%x", k)
}

// deadLo starts the S3 data store's dead-span records (schema.DeadKey).
var deadLo, _ = schema.DeadRange()

// intentLo starts the intent records of writes in place (schema.IntentKey).
var intentLo, _ = schema.IntentRange()

// openLo starts the open records of sessions (schema.OpenKey).
var openLo, _ = schema.OpenRange()

// lockLo starts the lock records of sessions (schema.LockKey).
var lockLo, _ = schema.LockRange()
