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
