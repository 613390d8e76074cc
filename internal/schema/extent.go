package schema

import (
	"encoding/binary"
	"encoding/hex"

	"github.com/zeebo/blake3"
	"github.com/zeebo/xxh3"
)

// HashSize is the length of a chunk name: BLAKE3-256.
const HashSize = 32

// Hash names a chunk by its content.
type Hash [HashSize]byte

// Short is the hash's first 8 bytes in hex, as messages name a chunk.
// Callers pass it rather than h[:8] to fmt: slicing would move h to the
// heap on every call, error or not.
func (h Hash) Short() string { return hex.EncodeToString(h[:8]) }

// Sum hashes chunk content.
func Sum(p []byte) Hash { return Hash(blake3.Sum256(p)) }

// Extent maps Length bytes of a file, starting at the offset in its key, to
// the bytes of chunk Hash starting at ChunkOff. Extents may reference part of
// a chunk, so an overwrite never rewrites the chunk it lands in.
type Extent struct {
	Hash     Hash
	ChunkOff uint32
	Length   uint32
	// Hint, when set, says where the write that made this extent found
	// the chunk stored, whole and uncompressed (Length bytes from
	// ChunkOff 0), and the chunk's check: a verified read can go there
	// without looking up the chunk's record (docs/BLOCK.md, "Location
	// hints"). The chunk record stays the truth: a hint can go stale, and
	// only a read whose bytes pass the check may trust it. It is not part
	// of the extent's identity (SameChunk).
	Hint Hint
	// Owned says that the extent is the only reference to the bytes at
	// its hint, which then are the truth and not a hint: the chunk table
	// has no record for them unless a record of Hash names that very
	// place, in which case the extent counts in that record's refcount
	// like any other (docs/BLOCK.md, "Owned blocks"). Only an extent over
	// a whole chunk with a hint is owned.
	Owned bool
}

// Hint is a chunk's location and check as an extent remembers them.
// Segment 0 means no hint.
type Hint struct {
	Segment uint32
	Offset  uint64
	Check   uint64
}

// Has reports whether the hint is set.
func (h Hint) Has() bool { return h.Segment != 0 }

// SameChunk reports whether x and y map the same bytes of the same chunk,
// whatever their hints say.
func (x Extent) SameChunk(y Extent) bool {
	return x.Hash == y.Hash && x.ChunkOff == y.ChunkOff && x.Length == y.Length
}

// Unowned returns extent record v as a copy of it is kept (a version a
// pin retains): a copy of an owned extent does not own its bytes.
func Unowned(v []byte) ([]byte, error) {
	x, err := DecodeExtent(v)
	if err != nil || !x.Owned {
		return v, err
	}
	x.Owned = false
	return x.Encode(), nil
}

// Extent record formats: 1 plain, 2 with a hint, 3 owning the bytes at
// its hint.
const (
	extentFormat       = 1
	extentFormatHinted = 2
	extentFormatOwned  = 3
)

// ExtentFormatOwned is the first byte of an owned extent's record: a walk
// looking for owned extents skips the others undecoded.
const ExtentFormatOwned = extentFormatOwned

// Encode returns the record bytes. A hint is kept only on an extent
// that maps its whole chunk from the start (ChunkOff 0), as hints are.
func (x *Extent) Encode() []byte { return x.AppendEncode(make([]byte, 0, 1+HashSize+10+22)) }

// AppendEncode appends the record bytes to dst: a writer that sets many
// extents encodes them all into one buffer of its own.
func (x *Extent) AppendEncode(dst []byte) []byte {
	e := enc{b: dst}
	hinted := x.Hint.Has() && x.ChunkOff == 0
	switch {
	case hinted && x.Owned:
		e.raw([]byte{extentFormatOwned})
	case hinted:
		e.raw([]byte{extentFormatHinted})
	default:
		e.raw([]byte{extentFormat})
	}
	e.raw(x.Hash[:])
	e.u(uint64(x.ChunkOff))
	e.u(uint64(x.Length))
	if hinted {
		e.u(uint64(x.Hint.Segment))
		e.u(x.Hint.Offset)
		e.b = binary.LittleEndian.AppendUint64(e.b, x.Hint.Check)
	}
	return e.b
}

// DecodeExtent parses an extent record.
func DecodeExtent(b []byte) (Extent, error) {
	d := dec{b: b}
	format := d.raw(1)
	if d.err != nil || format[0] < extentFormat || format[0] > extentFormatOwned {
		return Extent{}, ErrBadRecord
	}
	var x Extent
	copy(x.Hash[:], d.raw(HashSize))
	x.ChunkOff = d.u32()
	x.Length = d.u32()
	if format[0] >= extentFormatHinted {
		x.Owned = format[0] == extentFormatOwned
		x.Hint.Segment = d.u32()
		x.Hint.Offset = d.u()
		if p := d.raw(8); d.err == nil {
			x.Hint.Check = binary.LittleEndian.Uint64(p)
		}
		if d.err == nil && (x.Hint.Segment == 0 || x.ChunkOff != 0) {
			return Extent{}, ErrBadRecord // not canonical: Encode never writes it
		}
	}
	if d.err == nil && x.Length == 0 {
		return Extent{}, ErrBadRecord
	}
	return x, d.end()
}

// Compression of a stored chunk.
const (
	CompNone = 0
	CompZstd = 1
)

// Chunk is the record of a stored chunk; the chunk table doubles as the
// dedup index.
type Chunk struct {
	Segment uint32 // blob location
	Offset  uint64
	Stored  uint32 // bytes in the blob store
	Raw     uint32 // bytes after decompression
	Comp    uint8
	Refs    uint64 // extent references held by metadata

	// Check is the XXH3-64 of the raw bytes. Reads verify it rather than
	// the hash: it catches damage as surely (a miss is 2^-64 likely) at a
	// sixteenth of the CPU. Records written before it existed have no
	// check (HasCheck false); reads of them verify the hash.
	Check    uint64
	HasCheck bool

	// Inline, when not empty, is the chunk's stored bytes (Stored of them,
	// compressed as Comp says), kept in the record itself instead of the
	// blob store: Segment and Offset are then 0 and the chunk has no
	// location. Shared volumes inline small chunks so that a small file's
	// close is one metadata commit, not an upload and a commit
	// (docs/SHARED.md, "Small chunks inline"). Inline records always
	// carry the check. A string, not a slice, so that records stay
	// comparable values.
	Inline string
}

// IsInline reports whether the chunk's bytes are in its record.
func (c *Chunk) IsInline() bool { return c.Inline != "" }

// Chunk record formats: 1 without the check, 2 with it, 3 with the check
// and the stored bytes inline.
const (
	chunkFormat        = 1
	chunkFormatChecked = 2
	chunkFormatInline  = 3
)

// Encode returns the record bytes.
func (c *Chunk) Encode() []byte {
	e := enc{b: make([]byte, 0, 40+len(c.Inline))}
	if c.IsInline() {
		e.raw([]byte{chunkFormatInline})
	} else if c.HasCheck {
		e.raw([]byte{chunkFormatChecked})
	} else {
		e.raw([]byte{chunkFormat})
	}
	e.u(uint64(c.Segment))
	e.u(c.Offset)
	e.u(uint64(c.Stored))
	e.u(uint64(c.Raw))
	e.u(uint64(c.Comp))
	e.u(c.Refs)
	if c.HasCheck || c.IsInline() {
		e.b = binary.LittleEndian.AppendUint64(e.b, c.Check)
	}
	e.b = append(e.b, c.Inline...)
	return e.b
}

// DecodeChunk parses a chunk record.
func DecodeChunk(b []byte) (Chunk, error) {
	d := dec{b: b}
	format := d.raw(1)
	if d.err != nil || format[0] < chunkFormat || format[0] > chunkFormatInline {
		return Chunk{}, ErrBadRecord
	}
	c := Chunk{Segment: d.u32(), Offset: d.u(), Stored: d.u32(), Raw: d.u32()}
	comp := d.u()
	c.Refs = d.u()
	if format[0] >= chunkFormatChecked {
		if p := d.raw(8); d.err == nil {
			c.Check, c.HasCheck = binary.LittleEndian.Uint64(p), true
		}
	}
	if format[0] == chunkFormatInline {
		if c.Segment != 0 || c.Offset != 0 || c.Stored == 0 {
			return Chunk{}, ErrBadRecord
		}
		c.Inline = string(d.raw(int(c.Stored))) // a copy: b may be reused by the store
	}
	if comp > CompZstd || (d.err == nil && c.Raw == 0) {
		return Chunk{}, ErrBadRecord
	}
	c.Comp = uint8(comp)
	return c, d.end()
}

// CheckSum is the check of a chunk's raw bytes (Chunk.Check).
func CheckSum(p []byte) uint64 { return xxh3.Hash(p) }
