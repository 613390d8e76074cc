package schema

import (
	"bytes"
	"encoding/binary"
)

// The change journal has two key spaces. "j" + version + ino [+ name] is
// the whole volume's, in version order (what cache invalidation and
// send/receive read). "J" + clone + version + ino [+ name] repeats the
// entries of inodes (and directories, for names) that carry a clone, so
// that a diff between clones reads only their changes. Entries older than
// the journal floor are pruned; cursors ("q" + consumer name) hold it back.
const (
	prefixTreeJournal   = 'J'
	prefixJournalCursor = 'q'
)

// Journal singletons.
var (
	// KeyJournalFloor is the oldest version whose entries are all kept;
	// older ones are pruned or being pruned.
	KeyJournalFloor = []byte("\x00journal_floor")
	// KeyTreeJournalSince is the first version since which the "J" keys
	// are complete (volumes made before they existed set it at open).
	KeyTreeJournalSince = []byte("\x00tree_journal_since")
	// KeyJournalCompacted bounds the compacted part of the journal: below
	// it, an inode's or a name's entries may have been collapsed into the
	// newest one (which is what a diff needs); at and above it every
	// entry is kept. It only rises, and is raised before entries go.
	KeyJournalCompacted = []byte("\x00journal_compacted")
)

// TreeJournalKey is the entry of ino (of clone) at version.
func TreeJournalKey(clone, version, ino uint64) []byte {
	return appendU64(appendU64(u64key(prefixTreeJournal, clone, 16), version), ino)
}

// TreeJournalNameKey is the entry of name in directory dir (of clone).
func TreeJournalNameKey(clone, version, dir uint64, name string) []byte {
	return append(appendU64(appendU64(u64key(prefixTreeJournal, clone, 16+len(name)), version), dir), name...)
}

// TreeJournalRange bounds clone's entries with from <= version < to.
func TreeJournalRange(clone, from, to uint64) (lower, upper []byte) {
	return appendU64(u64key(prefixTreeJournal, clone, 8), from), appendU64(u64key(prefixTreeJournal, clone, 8), to)
}

// TreeJournalAll bounds the entries of every clone.
func TreeJournalAll() (lower, upper []byte) {
	return []byte{prefixTreeJournal}, []byte{prefixTreeJournal + 1}
}

// ParseTreeJournalKey splits a "J" key.
func ParseTreeJournalKey(key []byte) (clone, version, ino uint64, name string, err error) {
	if len(key) < 25 || key[0] != prefixTreeJournal || bytes.IndexByte(key[25:], 0) >= 0 {
		return 0, 0, 0, "", ErrBadKey
	}
	be := binary.BigEndian
	return be.Uint64(key[1:]), be.Uint64(key[9:]), be.Uint64(key[17:]), string(key[25:]), nil
}

// JournalCursorKey is the cursor of a journal consumer: the value (U64)
// is the oldest version whose entries it still needs.
func JournalCursorKey(name string) []byte {
	return append([]byte{prefixJournalCursor}, name...)
}

// JournalCursorRange bounds all cursors.
func JournalCursorRange() (lower, upper []byte) {
	return []byte{prefixJournalCursor}, []byte{prefixJournalCursor + 1}
}

// JournalCursorName is the consumer name of a cursor key.
func JournalCursorName(key []byte) (string, error) {
	if len(key) < 2 || key[0] != prefixJournalCursor {
		return "", ErrBadKey
	}
	return string(key[1:]), nil
}
