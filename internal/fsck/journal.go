package fsck

import (
	"bytes"
	"fmt"

	"github.com/doppelfs/doppel/internal/schema"
)

// The journal's records: entries (the volume's and each clone's), the
// floor, and consumer cursors. Entries below the floor are not a problem:
// the pruner deletes them after raising the floor, and a crash between
// the two leaves them for its next pass.

// journalSingleton decodes the journal's singleton records; false if k is
// not one of them.
func (c *checker) journalSingleton(k, v []byte) bool {
	var what string
	switch {
	case bytes.Equal(k, schema.KeyJournalFloor):
		what = "journal floor"
	case bytes.Equal(k, schema.KeyTreeJournalSince):
		what = "clone journal start"
	case bytes.Equal(k, schema.KeyJournalCompacted):
		what = "journal compaction bound"
	default:
		return false
	}
	if _, err := schema.ParseU64(v); err != nil {
		c.report(KindDecode, noIno, "%s record: %v", what, err)
		c.deleteEarly(KindDecode, k, "deleted the "+what+" record (rewritten at the next open or prune)")
	}
	return true
}

// scanJournal decodes every journal entry (the volume's and the clones')
// and cursor.
func (c *checker) scanJournal() error {
	treeLower, treeUpper := schema.TreeJournalAll()
	for _, j := range []struct {
		what         string
		lower, upper []byte
		parse        func(k []byte) (ver, ino uint64, err error)
	}{
		{"journal key", []byte{'j'}, []byte{'j' + 1}, func(k []byte) (uint64, uint64, error) {
			ver, ino, _, err := schema.ParseJournalKey(k)
			return ver, ino, err
		}},
		{"clone journal key", treeLower, treeUpper, func(k []byte) (uint64, uint64, error) {
			_, ver, ino, _, err := schema.ParseTreeJournalKey(k)
			return ver, ino, err
		}},
	} {
		err := c.scan(j.lower, j.upper, func(k, v []byte) {
			ver, ino, err := j.parse(k)
			if err != nil {
				c.report(KindDecode, noIno, "%s %x: %v", j.what, k, err)
				c.deleteKey(KindDecode, noIno, k, "deleted a malformed "+j.what)
				return
			}
			c.maxVersion = max(c.maxVersion, ver)
			c.journalEntry(k, v, ino, ver)
		})
		if err != nil {
			return err
		}
	}
	lower, upper := schema.JournalCursorRange()
	return c.scan(lower, upper, func(k, v []byte) {
		if _, err := schema.ParseU64(v); err != nil {
			c.report(KindDecode, noIno, "journal cursor %q: %v", k[1:], err)
			c.deleteKey(KindDecode, noIno, k, fmt.Sprintf("deleted journal cursor %q (its consumer sets it again)", k[1:]))
		}
	})
}

func (c *checker) journalEntry(k, v []byte, ino, ver uint64) {
	if _, err := schema.DecodeJournalEntry(v); err != nil {
		c.report(KindDecode, ino, "journal entry of inode %d at version %d: %v", ino, ver, err)
		c.deleteKey(KindDecode, ino, k, fmt.Sprintf("deleted the journal entry of inode %d at version %d", ino, ver))
	}
}
