package schema

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
)

// MaxNameBytes bounds every name a key holds: directory entries,
// extended attributes (the kernel's limits) and journal cursors.
const MaxNameBytes = 255

// MaxKeyBytes bounds the keys this package builds (the longest, a clone's
// journal entry of a name, is 25+MaxNameBytes bytes; TestKeysFitMaxKeyBytes).
// A metadata store must take keys of this length: PostgreSQL's B-tree
// refuses entries of more than about 2,700 bytes.
const MaxKeyBytes = 512

// Key prefixes. They are part of the on-disk format: never renumber.
const (
	prefixSingleton = 0x00
	prefixInode     = 'i'
	prefixDirent    = 'd'
	prefixParent    = 'p'
	prefixExtent    = 'e'
	prefixXattr     = 'x'
	prefixChunk     = 'k'
	prefixJournal   = 'j'
	prefixOrphan    = 'o'
	prefixFree      = 'f'
)

// Singleton keys.
var (
	KeyConfig  = []byte("\x00config")
	KeyNextIno = []byte("\x00next_ino")
	KeyVersion = []byte("\x00version")
	KeyStats   = []byte("\x00stats")
	KeySession = []byte("\x00session")
	// KeyNextPack is the highest pack number handed out to an S3 data
	// store of a shared volume (a counter, meta.Counters).
	KeyNextPack = []byte("\x00next_pack")
	// KeyDataURL is where a shared volume's chunk data lives, as init
	// was told (an s3:// URL without credentials; empty: the segment
	// files of the store directory that made it), so that `doppel join`
	// needs only the metadata URL. Volumes made before it existed have
	// none.
	KeyDataURL = []byte("\x00data_url")
	// KeyHosts, present, says that several hosts may mount the shared
	// volume at once (`doppel join` sets it): every host then runs the
	// code for several (docs/SHARED.md, 9). Its value is "many".
	KeyHosts = []byte("\x00hosts")
)

// deadPrefix starts the S3 data store's dead-span records: per pack, one
// for each writer (DeadKeyOf: the session of the host that saved it; a
// volume of one host, and older volumes, have one without, DeadKey), its
// merged dead spans as (start, end) pairs of big-endian uint64s. A pack's
// dead spans are the union of its records: spans only ever die, so each
// host can save what it knows without reading, and no host's save
// overwrites another's. They are a cache of what the chunk table implies:
// losing one costs space until fsck --repair, never data.
const deadPrefix = "\x00dead/"

// DeadKey is the key of pack num's dead-span record of no writer.
func DeadKey(num uint32) []byte { return binary.BigEndian.AppendUint32([]byte(deadPrefix), num) }

// DeadKeyOf is the key of pack num's dead-span record saved by writer (0:
// DeadKey).
func DeadKeyOf(num uint32, writer uint64) []byte {
	if writer == 0 {
		return DeadKey(num)
	}
	return binary.BigEndian.AppendUint64(DeadKey(num), writer)
}

// DeadPackRange bounds the dead-span records of pack num, of every writer.
func DeadPackRange(num uint32) (lower, upper []byte) {
	lo := DeadKey(num)
	return lo, append(slices.Clone(lo), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
}

// DeadRange bounds the dead-span records.
func DeadRange() (lower, upper []byte) {
	return []byte(deadPrefix), []byte(deadPrefix[:len(deadPrefix)-1] + "0")
}

// DecodeDeadKey returns the pack number of a dead-span record's key.
func DecodeDeadKey(k []byte) (uint32, error) {
	if (len(k) != len(deadPrefix)+4 && len(k) != len(deadPrefix)+12) || string(k[:len(deadPrefix)]) != deadPrefix {
		return 0, ErrBadKey
	}
	return binary.BigEndian.Uint32(k[len(deadPrefix):]), nil
}

// EncodeSpans encodes dead spans as (start, end) pairs.
func EncodeSpans(spans [][2]int64) []byte {
	b := make([]byte, 0, 16*len(spans))
	for _, s := range spans {
		b = binary.BigEndian.AppendUint64(b, uint64(s[0]))
		b = binary.BigEndian.AppendUint64(b, uint64(s[1]))
	}
	return b
}

// DecodeSpans decodes EncodeSpans, refusing empty or negative spans.
func DecodeSpans(b []byte) ([][2]int64, error) {
	if len(b)%16 != 0 {
		return nil, ErrBadRecord
	}
	spans := make([][2]int64, 0, len(b)/16)
	for ; len(b) > 0; b = b[16:] {
		s := [2]int64{int64(binary.BigEndian.Uint64(b)), int64(binary.BigEndian.Uint64(b[8:]))}
		if s[0] < 0 || s[1] <= s[0] {
			return nil, ErrBadRecord
		}
		spans = append(spans, s)
	}
	return spans, nil
}

// ErrBadKey is returned when a key does not have the expected shape.
var ErrBadKey = errors.New("schema: malformed key")

func u64key(prefix byte, a uint64, extra int) []byte {
	k := make([]byte, 9, 9+extra)
	k[0] = prefix
	binary.BigEndian.PutUint64(k[1:], a)
	return k
}

func appendU64(k []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(k, v) }

// InodeKey is the key of inode ino's record.
func InodeKey(ino uint64) []byte { return u64key(prefixInode, ino, 0) }

// InodeRange bounds all inode records.
func InodeRange() (lower, upper []byte) { return []byte{prefixInode}, []byte{prefixInode + 1} }

// DirentKey is the key of entry name in directory dir.
func DirentKey(dir uint64, name string) []byte {
	return append(u64key(prefixDirent, dir, len(name)), name...)
}

// DirentRange bounds all entries of directory dir.
func DirentRange(dir uint64) (lower, upper []byte) {
	return u64key(prefixDirent, dir, 0), u64key(prefixDirent, dir+1, 0)
}

// DirentName extracts the entry name from a dirent key.
func DirentName(key []byte) (string, error) {
	if len(key) < 9 || key[0] != prefixDirent {
		return "", ErrBadKey
	}
	return string(key[9:]), nil
}

// ParentKey records that ino has an entry name in directory parent.
func ParentKey(ino, parent uint64, name string) []byte {
	k := appendU64(u64key(prefixParent, ino, 8+len(name)), parent)
	return append(k, name...)
}

// ParentRange bounds all back-references of ino.
func ParentRange(ino uint64) (lower, upper []byte) {
	return u64key(prefixParent, ino, 0), u64key(prefixParent, ino+1, 0)
}

// ParentsRange bounds the back-references of every inode.
func ParentsRange() (lower, upper []byte) { return []byte{prefixParent}, []byte{prefixParent + 1} }

// ParseParentKey splits a back-reference key.
func ParseParentKey(key []byte) (ino, parent uint64, name string, err error) {
	if len(key) < 17 || key[0] != prefixParent {
		return 0, 0, "", ErrBadKey
	}
	return binary.BigEndian.Uint64(key[1:]), binary.BigEndian.Uint64(key[9:]), string(key[17:]), nil
}

// ExtentKey is the key of the extent of ino starting at file offset off.
func ExtentKey(ino uint64, off int64) []byte {
	return AppendExtentKey(make([]byte, 0, 17), ino, off)
}

// AppendExtentKey appends ExtentKey(ino, off) to dst.
func AppendExtentKey(dst []byte, ino uint64, off int64) []byte {
	return appendU64(appendU64(append(dst, prefixExtent), ino), uint64(off))
}

// ExtentRange bounds all extents of ino.
func ExtentRange(ino uint64) (lower, upper []byte) {
	return u64key(prefixExtent, ino, 0), u64key(prefixExtent, ino+1, 0)
}

// ExtentOffset extracts the file offset from an extent key.
func ExtentOffset(key []byte) (int64, error) {
	_, off, err := ParseExtentKey(key)
	return off, err
}

// ParseExtentKey splits an extent key into its inode and file offset.
func ParseExtentKey(key []byte) (ino uint64, off int64, err error) {
	if len(key) != 17 || key[0] != prefixExtent {
		return 0, 0, ErrBadKey
	}
	return binary.BigEndian.Uint64(key[1:]), int64(binary.BigEndian.Uint64(key[9:])), nil
}

// XattrKey is the key of attribute name of ino.
func XattrKey(ino uint64, name string) []byte {
	return append(u64key(prefixXattr, ino, len(name)), name...)
}

// XattrRange bounds all attributes of ino.
func XattrRange(ino uint64) (lower, upper []byte) {
	return u64key(prefixXattr, ino, 0), u64key(prefixXattr, ino+1, 0)
}

// XattrName extracts the attribute name from an xattr key.
func XattrName(key []byte) (string, error) {
	if len(key) < 9 || key[0] != prefixXattr {
		return "", ErrBadKey
	}
	return string(key[9:]), nil
}

// ChunkKey is the key of the chunk named by hash.
func ChunkKey(h Hash) []byte {
	k := make([]byte, 1+len(h))
	k[0] = prefixChunk
	copy(k[1:], h[:])
	return k
}

// ChunkRange bounds all chunk records.
func ChunkRange() (lower, upper []byte) { return []byte{prefixChunk}, []byte{prefixChunk + 1} }

// ChunkHash extracts the hash from a chunk key.
func ChunkHash(key []byte) (Hash, error) {
	var h Hash
	if len(key) != 1+len(h) || key[0] != prefixChunk {
		return h, ErrBadKey
	}
	copy(h[:], key[1:])
	return h, nil
}

// JournalKey is the key of the journal entry for ino at version.
func JournalKey(version, ino uint64) []byte {
	return appendU64(u64key(prefixJournal, version, 8), ino)
}

// JournalNameKey is the key of the journal entry saying that entry name
// of directory dir changed at version, so that a diff finds the names that
// changed without listing the directory.
func JournalNameKey(version, dir uint64, name string) []byte {
	return append(appendU64(u64key(prefixJournal, version, 8+len(name)), dir), name...)
}

// JournalRange bounds journal entries with from <= version < to.
func JournalRange(from, to uint64) (lower, upper []byte) {
	return u64key(prefixJournal, from, 0), u64key(prefixJournal, to, 0)
}

// ParseJournalKey splits a journal key; name is empty unless the key is a
// JournalNameKey.
func ParseJournalKey(key []byte) (version, ino uint64, name string, err error) {
	if len(key) < 17 || key[0] != prefixJournal || bytes.IndexByte(key[17:], 0) >= 0 {
		return 0, 0, "", ErrBadKey
	}
	return binary.BigEndian.Uint64(key[1:]), binary.BigEndian.Uint64(key[9:]), string(key[17:]), nil
}

// openPrefix starts the open records of a volume that several hosts
// mount at once: one per (inode, session) while that session has the
// inode open (docs/SHARED.md, 9.5), so that an unlink on another host
// keeps the inode.
const openPrefix = "\x00open/"

// OpenKey is the record of session having ino open.
func OpenKey(ino, session uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64([]byte(openPrefix), ino), session)
}

// OpenRangeOf bounds the open records of ino.
func OpenRangeOf(ino uint64) (lower, upper []byte) {
	lo := binary.BigEndian.AppendUint64([]byte(openPrefix), ino)
	return lo, binary.BigEndian.AppendUint64(slices.Clone(lo), ^uint64(0))
}

// OpenRange bounds all open records.
func OpenRange() (lower, upper []byte) {
	return []byte(openPrefix), []byte(openPrefix[:len(openPrefix)-1] + "0")
}

// ParseOpenKey splits an open record's key.
func ParseOpenKey(k []byte) (ino, session uint64, err error) {
	if len(k) != len(openPrefix)+16 || string(k[:len(openPrefix)]) != openPrefix {
		return 0, 0, ErrBadKey
	}
	return binary.BigEndian.Uint64(k[len(openPrefix):]), binary.BigEndian.Uint64(k[len(openPrefix)+8:]), nil
}

// OrphanKey marks ino as unlinked but still open.
func OrphanKey(ino uint64) []byte { return u64key(prefixOrphan, ino, 0) }

// OrphanRange bounds all orphan markers.
func OrphanRange() (lower, upper []byte) { return []byte{prefixOrphan}, []byte{prefixOrphan + 1} }

// OrphanIno extracts the inode number from an orphan key.
func OrphanIno(key []byte) (uint64, error) {
	if len(key) != 9 || key[0] != prefixOrphan {
		return 0, ErrBadKey
	}
	return binary.BigEndian.Uint64(key[1:]), nil
}

// U64 encodes a counter value.
func U64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// ParseU64 decodes a counter value.
func ParseU64(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, ErrBadRecord
	}
	return binary.BigEndian.Uint64(b), nil
}

// lockPrefix starts the fcntl and flock locks of a volume that several
// hosts mount at once (docs/SHARED.md, 9.4): one record per (inode,
// session, lock owner, kind) that holds a lock, its value the owner's
// locks (filelock.Encode).
const lockPrefix = "\x00lock/"

// Kinds of lock records: fcntl (POSIX) locks and flock locks never
// conflict with each other.
const (
	LockPosix byte = 'p'
	LockFlock byte = 'f'
)

// LockKey is the record of owner's locks of kind on ino, owner being a
// lock owner of session's host.
func LockKey(ino, session, owner uint64, kind byte) []byte {
	k := binary.BigEndian.AppendUint64([]byte(lockPrefix), ino)
	k = binary.BigEndian.AppendUint64(k, session)
	return append(binary.BigEndian.AppendUint64(k, owner), kind)
}

// LockRangeOf bounds the lock records of ino.
func LockRangeOf(ino uint64) (lower, upper []byte) {
	lo := binary.BigEndian.AppendUint64([]byte(lockPrefix), ino)
	return lo, binary.BigEndian.AppendUint64([]byte(lockPrefix), ino+1)
}

// LockRange bounds all lock records.
func LockRange() (lower, upper []byte) {
	return []byte(lockPrefix), []byte(lockPrefix[:len(lockPrefix)-1] + "0")
}

// ParseLockKey splits a lock record's key.
func ParseLockKey(k []byte) (ino, session, owner uint64, kind byte, err error) {
	n := len(lockPrefix)
	if len(k) != n+25 || string(k[:n]) != lockPrefix || (k[n+24] != LockPosix && k[n+24] != LockFlock) {
		return 0, 0, 0, 0, ErrBadKey
	}
	return binary.BigEndian.Uint64(k[n:]), binary.BigEndian.Uint64(k[n+8:]), binary.BigEndian.Uint64(k[n+16:]), k[n+24], nil
}
