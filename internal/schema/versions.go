package schema

import (
	"bytes"
	"encoding/binary"
)

// Key prefixes of retained versions, pins and clones (see versions.go and
// clone.go). Part of the on-disk format: never renumber.
const (
	prefixRetained = 'r'
	prefixRetainIx = 'R'
	prefixPin      = 'P'
	prefixClone    = 'C'
	prefixLinkMap  = 'h'
	prefixGone     = 'G'
)

// Versioned reports whether records under key are kept as retained old
// versions while a pin covers them: inodes, entries, back-references,
// extents and xattrs, the records a view of the past reads.
func Versioned(key []byte) bool {
	if len(key) < 9 {
		return false
	}
	switch key[0] {
	case prefixInode, prefixDirent, prefixParent, prefixExtent, prefixXattr:
		return true
	}
	return false
}

// OwnerIno is the inode a versioned key belongs to: the directory of an
// entry, the child of a back-reference, the file of an extent or xattr.
func OwnerIno(key []byte) uint64 { return binary.BigEndian.Uint64(key[1:9]) }

// RetainedKey is the key of key's value as it was at pinned version pin.
// A zero byte ends key so that the versions of one key sort together and
// before those of any longer key (names never contain a zero byte).
func RetainedKey(key []byte, pin uint64) []byte {
	k := make([]byte, 0, len(key)+10)
	k = append(k, prefixRetained)
	k = append(k, key...)
	k = append(k, 0)
	return appendU64(k, pin)
}

// RetainedPrefix is the common prefix of every retained version of key.
func RetainedPrefix(key []byte) []byte {
	k := make([]byte, 0, len(key)+2)
	k = append(k, prefixRetained)
	k = append(k, key...)
	return append(k, 0)
}

// RetainedBound maps a bound of live keys to the bound of their retained
// versions.
func RetainedBound(key []byte) []byte { return append([]byte{prefixRetained}, key...) }

// ParseRetainedKey splits a retained key into the live key and pin.
func ParseRetainedKey(k []byte) (key []byte, pin uint64, err error) {
	if len(k) < 1+9+1+8 || k[0] != prefixRetained || k[len(k)-9] != 0 {
		return nil, 0, ErrBadKey
	}
	return k[1 : len(k)-9], binary.BigEndian.Uint64(k[len(k)-8:]), nil
}

// RetainedRange bounds all retained versions.
func RetainedRange() (lower, upper []byte) {
	return []byte{prefixRetained}, []byte{prefixRetained + 1}
}

// RetainIndexKey lists key among the versions retained for pin, so that
// releasing the pin finds them without scanning every retained record.
func RetainIndexKey(pin uint64, key []byte) []byte {
	return append(u64key(prefixRetainIx, pin, len(key)), key...)
}

// RetainIndexRange bounds the index entries of pin.
func RetainIndexRange(pin uint64) (lower, upper []byte) {
	return u64key(prefixRetainIx, pin, 0), u64key(prefixRetainIx, pin+1, 0)
}

// RetainIndexKeyOf extracts the live key from an index key.
func RetainIndexKeyOf(k []byte) ([]byte, error) {
	if len(k) < 10 || k[0] != prefixRetainIx {
		return nil, ErrBadKey
	}
	return k[9:], nil
}

// Retained is a retained version: the value a key had, or that it did not
// exist.
type Retained struct {
	Present bool
	Value   []byte
}

const retainedFormat = 1

// Encode returns the record bytes.
func (r Retained) Encode() []byte {
	b := make([]byte, 0, 2+len(r.Value))
	b = append(b, retainedFormat, 0)
	if r.Present {
		b[1] = 1
		b = append(b, r.Value...)
	}
	return b
}

// DecodeRetained parses a retained version.
func DecodeRetained(b []byte) (Retained, error) {
	if len(b) < 2 || b[0] != retainedFormat || b[1] > 1 || (b[1] == 0 && len(b) != 2) {
		return Retained{}, ErrBadRecord
	}
	if b[1] == 0 {
		return Retained{}, nil
	}
	return Retained{Present: true, Value: bytes.Clone(b[2:])}, nil
}
