package schema

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"testing"
)

// The fuzz targets check every decoder against arbitrary bytes: it must not
// panic, and whatever it accepts must survive Encode then Decode unchanged,
// with Encode canonical (a second round gives the same bytes). Decoders
// accept non-minimal varints, so the input bytes themselves need not
// round-trip.

func FuzzDecodeInode(f *testing.F) {
	for _, n := range []Inode{
		{},
		{Mode: 0o100644, Uid: 1000, Gid: 1000, Nlink: 1, Size: 1 << 20, Mapped: 1 << 19, Atime: -1, Mtime: 1, Ctime: 2, Btime: 3, Version: 9},
		{Mode: 0o120777, Target: "target\xff"},
		{Mode: math.MaxUint32, Size: math.MaxInt64, Atime: math.MinInt64, Version: math.MaxUint64},
	} {
		f.Add(n.Encode())
	}
	f.Add([]byte{inodeFormat})
	f.Add([]byte{inodeFormat, 0x80, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) // non-minimal Mode
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := DecodeInode(b)
		if err != nil {
			return
		}
		enc := n.Encode()
		n2, err := DecodeInode(enc)
		if err != nil || !reflect.DeepEqual(n2, n) {
			t.Fatalf("DecodeInode(%x) = %+v; re-encoded %x decodes to %+v, %v", b, n, enc, n2, err)
		}
		if enc2 := n2.Encode(); !bytes.Equal(enc, enc2) {
			t.Fatalf("Encode not canonical: %x then %x", enc, enc2)
		}
	})
}

func FuzzDecodeDirent(f *testing.F) {
	for _, d := range []Dirent{{}, {Ino: 1, Type: 0o040000}, {Ino: math.MaxUint64, Type: math.MaxUint32}} {
		f.Add(d.Encode())
	}
	f.Add([]byte{direntFormat, 0xff, 0xff, 0xff, 0xff, 0x10, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDirent(b)
		if err != nil {
			return
		}
		enc := d.Encode()
		d2, err := DecodeDirent(enc)
		if err != nil || d2 != d {
			t.Fatalf("DecodeDirent(%x) = %+v; re-encoded %x decodes to %+v, %v", b, d, enc, d2, err)
		}
		if enc2 := d2.Encode(); !bytes.Equal(enc, enc2) {
			t.Fatalf("Encode not canonical: %x then %x", enc, enc2)
		}
	})
}

func FuzzDecodeExtent(f *testing.F) {
	for _, x := range []Extent{
		{Hash: testHash(1), Length: 1},
		{Hash: Sum([]byte("seed")), ChunkOff: 4096, Length: 65536},
		{Hash: testHash(0xff), ChunkOff: math.MaxUint32, Length: math.MaxUint32},
		{Hash: testHash(2), Length: 4096, Hint: Hint{Segment: 12, Offset: 1 << 30, Check: 0xfeed}},
	} {
		f.Add(x.Encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := DecodeExtent(b)
		if err != nil {
			return
		}
		if x.Length == 0 {
			t.Fatalf("DecodeExtent(%x) accepted a zero-length extent", b)
		}
		if x.Hint.Has() && x.ChunkOff != 0 {
			t.Fatalf("DecodeExtent(%x) accepted a hint into the middle of a chunk", b)
		}
		enc := x.Encode()
		x2, err := DecodeExtent(enc)
		if err != nil || x2 != x {
			t.Fatalf("DecodeExtent(%x) = %+v; re-encoded %x decodes to %+v, %v", b, x, enc, x2, err)
		}
		if enc2 := x2.Encode(); !bytes.Equal(enc, enc2) {
			t.Fatalf("Encode not canonical: %x then %x", enc, enc2)
		}
	})
}

func FuzzDecodeChunk(f *testing.F) {
	for _, c := range []Chunk{
		{Segment: 1, Stored: 100, Raw: 100, Refs: 1},
		{Segment: 3, Offset: 1 << 30, Stored: 17, Raw: 65536, Comp: CompZstd, Refs: 1 << 40},
		{Segment: math.MaxUint32, Offset: math.MaxUint64, Stored: math.MaxUint32, Raw: math.MaxUint32, Comp: CompZstd, Refs: math.MaxUint64},
		{Segment: 2, Offset: 4096, Stored: 65536, Raw: 65536, Refs: 2, Check: 0x0123456789abcdef, HasCheck: true},
		{Segment: 1, Stored: 5, Raw: 9, Comp: CompZstd, Refs: 1, HasCheck: true}, // a check of 0
	} {
		f.Add(c.Encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeChunk(b)
		if err != nil {
			return
		}
		if c.Raw == 0 || c.Comp > CompZstd || (c.Check != 0 && !c.HasCheck) {
			t.Fatalf("DecodeChunk(%x) accepted invalid %+v", b, c)
		}
		enc := c.Encode()
		c2, err := DecodeChunk(enc)
		if err != nil || c2 != c {
			t.Fatalf("DecodeChunk(%x) = %+v; re-encoded %x decodes to %+v, %v", b, c, enc, c2, err)
		}
		if enc2 := c2.Encode(); !bytes.Equal(enc, enc2) {
			t.Fatalf("Encode not canonical: %x then %x", enc, enc2)
		}
	})
}

func FuzzDecodeStats(f *testing.F) {
	for _, s := range []Stats{
		{},
		{LogicalBytes: 1 << 40, PhysicalBytes: 1 << 30, RawBytes: 1 << 31, Chunks: 100, Inodes: 7},
		{LogicalBytes: math.MinInt64, PhysicalBytes: math.MaxInt64, RawBytes: -1, Chunks: -1, Inodes: math.MaxInt64},
		{PhysicalBytes: 4096, RawBytes: 4096, OwnedBlocks: 1},
	} {
		f.Add(s.Encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeStats(b)
		if err != nil {
			return
		}
		enc := s.Encode()
		s2, err := DecodeStats(enc)
		if err != nil || s2 != s {
			t.Fatalf("DecodeStats(%x) = %+v; re-encoded %x decodes to %+v, %v", b, s, enc, s2, err)
		}
		if enc2 := s2.Encode(); !bytes.Equal(enc, enc2) {
			t.Fatalf("Encode not canonical: %x then %x", enc, enc2)
		}
	})
}

func FuzzDecodeSession(f *testing.F) {
	for _, s := range []Session{{}, {FirstSegment: 7, Open: true}, {FirstSegment: math.MaxUint32}} {
		f.Add(s.Encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSession(b)
		if err != nil {
			return
		}
		enc := s.Encode()
		if s2, err := DecodeSession(enc); err != nil || s2 != s {
			t.Fatalf("DecodeSession(%x) = %+v; re-encoded %x decodes to %+v, %v", b, s, enc, s2, err)
		}
	})
}

func FuzzDecodeJournalEntry(f *testing.F) {
	for op := uint8(0); op <= OpDirents+1; op++ {
		f.Add(JournalEntry{Op: op}.Encode())
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := DecodeJournalEntry(b)
		if err != nil {
			return
		}
		if j.Op < OpCreate || j.Op > OpDirents {
			t.Fatalf("DecodeJournalEntry(%x) accepted op %d", b, j.Op)
		}
		// The encoding has a single spelling, so the input itself round-trips.
		if enc := j.Encode(); !bytes.Equal(enc, b) {
			t.Fatalf("DecodeJournalEntry(%x) = %+v, which encodes as %x", b, j, enc)
		}
	})
}

func FuzzDecodeConfig(f *testing.F) {
	for _, c := range []Config{
		{Format: FormatVersion, UUID: "5f0b8a5e-8a1c-4a55-9b0c-0e0d9a5b1c11", Chunking: "cdc:16K:64K:256K", Compression: "zstd", Created: 1700000000000000000},
		{Format: FormatBase, Chunking: "fixed:4K", Compression: "off", Created: -1},
		{Format: FormatUnpaddedPacks, Chunking: "fixed:4K", Compression: "off", PackAlign: 1},
	} {
		f.Add(EncodeConfig(c))
	}
	f.Add([]byte(`{"FORMAT":1,"Uuid":"x","extra":[1,2,{}]}`))
	f.Add([]byte(`{"format":1,"uuid":"\ud800\u00e9\u0000"}`))
	f.Add([]byte(`{"format":1,"uuid":"bad utf-8 \xff"}`))
	f.Add([]byte(`{"format":2}`))
	f.Add([]byte(`{"format":1,"pack_align":1}`))
	f.Add([]byte(`{"format":3}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeConfig(b)
		if err != nil {
			return
		}
		if c.Format < FormatBase || c.Format > FormatVersion || c.PackAlign != 0 && (c.PackAlign != 1 || c.Format < FormatUnpaddedPacks) {
			t.Fatalf("DecodeConfig(%q) accepted format %d with pack alignment %d", b, c.Format, c.PackAlign)
		}
		enc := EncodeConfig(c)
		c2, err := DecodeConfig(enc)
		if err != nil || c2 != c {
			t.Fatalf("DecodeConfig(%q) = %+v; re-encoded %s decodes to %+v, %v", b, c, enc, c2, err)
		}
		if enc2 := EncodeConfig(c2); !bytes.Equal(enc, enc2) {
			t.Fatalf("EncodeConfig not canonical: %s then %s", enc, enc2)
		}
	})
}

// FuzzParseKeys feeds arbitrary bytes to every key parser. A parser that
// accepts a key must return fields from which the matching builder rebuilds
// exactly that key: otherwise two keys would parse alike, or a parsed key
// would not address the record it came from.
func FuzzParseKeys(f *testing.F) {
	for _, k := range [][]byte{
		InodeKey(1), DirentKey(1, "name"), DirentKey(1, ""), ParentKey(2, 1, "name"),
		ExtentKey(2, 65536), ExtentKey(2, math.MaxInt64), XattrKey(2, "user.x"),
		ChunkKey(Sum([]byte("k"))), JournalKey(9, 2), OrphanKey(2), U64(12345),
		KeyConfig, KeyStats, {}, {'e'}, {'p', 0, 0, 0, 0, 0, 0, 0, 1},
		FreeKey(3, 4096), FreeKey(math.MaxUint32, math.MaxUint64),
		TreeJournalKey(1, 2, 3), TreeJournalNameKey(1, 2, 3, "name"), OpenKey(4, 5),
		LockKey(4, 5, 6, LockPosix), LockKey(4, 5, 6, LockFlock),
	} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k []byte) {
		// The inode number of the variable-length keys, when long enough.
		var ino uint64
		if len(k) >= 9 {
			ino = binary.BigEndian.Uint64(k[1:9])
		}
		check := func(what string, rebuilt []byte) {
			t.Helper()
			if !bytes.Equal(rebuilt, k) {
				t.Fatalf("%s accepted %x, but its fields rebuild %x", what, k, rebuilt)
			}
		}
		if i, p, name, err := ParseParentKey(k); err == nil {
			check("ParseParentKey", ParentKey(i, p, name))
		}
		if v, i, n, err := ParseJournalKey(k); err == nil && n == "" {
			check("ParseJournalKey", JournalKey(v, i))
		}
		if off, err := ExtentOffset(k); err == nil {
			check("ExtentOffset", ExtentKey(ino, off))
		}
		if h, err := ChunkHash(k); err == nil {
			check("ChunkHash", ChunkKey(h))
		}
		if i, err := OrphanIno(k); err == nil {
			check("OrphanIno", OrphanKey(i))
		}
		if name, err := DirentName(k); err == nil {
			check("DirentName", DirentKey(ino, name))
		}
		if name, err := XattrName(k); err == nil {
			check("XattrName", XattrKey(ino, name))
		}
		if seg, off, _, err := DecodeFree(k, FreeValue(1)); err == nil {
			check("DecodeFree", FreeKey(seg, off))
		}
		if v, err := ParseU64(k); err == nil {
			check("ParseU64", U64(v))
		}
		if c, v, i, name, err := ParseTreeJournalKey(k); err == nil {
			check("ParseTreeJournalKey", TreeJournalNameKey(c, v, i, name))
		}
		if i, s, err := ParseOpenKey(k); err == nil {
			check("ParseOpenKey", OpenKey(i, s))
		}
		if i, s, o, kind, err := ParseLockKey(k); err == nil {
			check("ParseLockKey", LockKey(i, s, o, kind))
		}
	})
}
