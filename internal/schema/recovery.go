package schema

import "encoding/binary"

// Session records which segments the open volume writes, so that after a
// crash the chunk data of transactions that never committed can be found
// and reclaimed: it can only lie in segments numbered FirstSegment or
// higher. Open is true from mount until a clean close.
type Session struct {
	FirstSegment uint32
	Open         bool
}

const sessionFormat = 1

// Encode returns the record bytes.
func (s Session) Encode() []byte {
	e := enc{}
	e.raw([]byte{sessionFormat})
	e.u(uint64(s.FirstSegment))
	open := uint64(0)
	if s.Open {
		open = 1
	}
	e.u(open)
	return e.b
}

// DecodeSession parses a session record.
func DecodeSession(b []byte) (Session, error) {
	d := dec{b: b}
	d.format(sessionFormat)
	s := Session{FirstSegment: d.u32()}
	switch d.u() {
	case 0:
	case 1:
		s.Open = true
	default:
		return Session{}, ErrBadRecord
	}
	return s, d.end()
}

// FreeKey names chunk bytes at (segment, offset) whose last reference was
// dropped. It is written in the same batch as the drop, so that space a
// crash kept from being punched is punched at the next open; its value is
// FreeValue(length).
func FreeKey(segment uint32, offset uint64) []byte {
	k := make([]byte, 1, 13)
	k[0] = prefixFree
	k = binary.BigEndian.AppendUint32(k, segment)
	return appendU64(k, offset)
}

// FreeRange bounds all free records.
func FreeRange() (lower, upper []byte) { return []byte{prefixFree}, []byte{prefixFree + 1} }

// FreeValue encodes the stored length of a free record.
func FreeValue(length uint32) []byte { return binary.BigEndian.AppendUint32(nil, length) }

// DecodeFree parses a free record.
func DecodeFree(key, value []byte) (segment uint32, offset uint64, length uint32, err error) {
	if len(key) != 13 || key[0] != prefixFree {
		return 0, 0, 0, ErrBadKey
	}
	if len(value) != 4 {
		return 0, 0, 0, ErrBadRecord
	}
	return binary.BigEndian.Uint32(key[1:]), binary.BigEndian.Uint64(key[5:]), binary.BigEndian.Uint32(value), nil
}

// intentPrefix begins every intent record's key.
const intentPrefix = "\x00inplace/"

// IntentKey names zone of inode ino (a range of IntentZoneBytes of the
// file) into which owned blocks may have been written in place since the
// volume was last synced (docs/BLOCK.md, "Owned blocks overwritten in
// place"): after a crash, recovery checks that zone's owned blocks. It is
// written durably before the first such write; its value is empty.
func IntentKey(ino, zone uint64) []byte {
	k := binary.BigEndian.AppendUint64([]byte(intentPrefix), ino)
	return binary.BigEndian.AppendUint64(k, zone)
}

// IntentZoneBytes is the span of a file one intent record covers.
const IntentZoneBytes = 64 << 20

// IntentRange bounds all intent records.
func IntentRange() (lower, upper []byte) {
	return []byte(intentPrefix), []byte("\x00inplace0") // '0' follows '/'
}

// DecodeIntentKey parses an intent record's key.
func DecodeIntentKey(k []byte) (ino, zone uint64, err error) {
	if len(k) != len(intentPrefix)+16 || string(k[:len(intentPrefix)]) != intentPrefix {
		return 0, 0, ErrBadKey
	}
	k = k[len(intentPrefix):]
	return binary.BigEndian.Uint64(k), binary.BigEndian.Uint64(k[8:]), nil
}
