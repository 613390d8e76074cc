package schema

import (
	"bytes"
	"encoding/binary"
)

// Provisional names (docs/BLOCK.md, "Blocks written in place, named
// later"). A block written over an owned block in place is not hashed
// on the write's path: its extent gets a name made of its place and
// check instead, and the background dedup pass replaces that with the
// BLAKE3 hash later. The name is a chunk's name like any other within the
// volume: two extents with the same provisional name map the same bytes
// (the same place with the same check), and a copy of the block gives it
// a record under that name. What it is not is a content hash: the same
// bytes elsewhere have another name, so dedup lookups never find it.
//
// Layout: provisionalMagic (12 bytes), segment (4), offset (8), check
// (8), little-endian. A BLAKE3 hash starts with the magic once in 2^96.
var provisionalMagic = [12]byte{'d', 'o', 'p', 'p', 'e', 'l', 0xfe, 'p', 'r', 'o', 'v', 0xff}

// ProvisionalName is the provisional name of the bytes with check at
// segment and offset.
func ProvisionalName(segment uint32, offset, check uint64) Hash {
	var h Hash
	copy(h[:], provisionalMagic[:])
	binary.LittleEndian.PutUint32(h[12:], segment)
	binary.LittleEndian.PutUint64(h[16:], offset)
	binary.LittleEndian.PutUint64(h[24:], check)
	return h
}

// Provisional reports whether h is a provisional name, and if so the
// place and check it was made of.
func (h Hash) Provisional() (segment uint32, offset, check uint64, ok bool) {
	if !bytes.Equal(h[:12], provisionalMagic[:]) {
		return 0, 0, 0, false
	}
	return binary.LittleEndian.Uint32(h[12:]), binary.LittleEndian.Uint64(h[16:]), binary.LittleEndian.Uint64(h[24:]), true
}

// IsProvisional reports whether h is a provisional name.
func (h Hash) IsProvisional() bool { return bytes.Equal(h[:12], provisionalMagic[:]) }
