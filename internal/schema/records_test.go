package schema

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// testHash returns a hash whose bytes are all b, so tests can tell hashes apart
// at a glance.
func testHash(b byte) Hash {
	var h Hash
	for i := range h {
		h[i] = b
	}
	return h
}

// rejectsDamaged checks the properties every binary record shares: each
// strict prefix of a valid encoding is rejected (all fields are required),
// trailing bytes are rejected, and an unknown format byte is rejected.
func rejectsDamaged(t *testing.T, name string, enc []byte, decode func([]byte) error) {
	t.Helper()
	for n := range len(enc) {
		if err := decode(enc[:n]); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: prefix of %d/%d bytes: err = %v, want ErrBadRecord", name, n, len(enc), err)
		}
	}
	long := append(bytes.Clone(enc), 0)
	if err := decode(long); !errors.Is(err, ErrBadRecord) {
		t.Errorf("%s: trailing byte: err = %v, want ErrBadRecord", name, err)
	}
	for _, f := range []byte{0, 2, 0xff} {
		if f == enc[0] {
			continue
		}
		bad := bytes.Clone(enc)
		bad[0] = f
		if err := decode(bad); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: format byte %#x: err = %v, want ErrBadRecord", name, f, err)
		}
	}
}

func TestInodeRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   Inode
	}{
		{"zero", Inode{}},
		{"regular", Inode{Mode: 0o100644, Uid: 1000, Gid: 1000, Nlink: 1, Size: 12345, Mapped: 8192,
			Atime: 1700000000123456789, Mtime: 1700000000123456789, Ctime: 1700000000223456789,
			Btime: 1600000000000000000, Version: 42}},
		{"symlink", Inode{Mode: 0o120777, Nlink: 1, Size: 11, Target: "../some/dir"}},
		{"device", Inode{Mode: 0o020600, Rdev: 0x0801, Nlink: 1}},
		{"pre-epoch times", Inode{Atime: -1, Mtime: math.MinInt64, Ctime: -123456789, Btime: math.MinInt64}},
		{"maxima", Inode{Mode: math.MaxUint32, Uid: math.MaxUint32, Gid: math.MaxUint32, Nlink: math.MaxUint32,
			Size: math.MaxInt64, Mapped: math.MaxInt64, Rdev: math.MaxUint32, Atime: math.MaxInt64,
			Mtime: math.MaxInt64, Ctime: math.MaxInt64, Btime: math.MaxInt64, Version: math.MaxUint64}},
		{"binary target", Inode{Mode: 0o120777, Target: "\x00\xff\xfe non-UTF-8 \x80"}},
		{"long target", Inode{Mode: 0o120777, Target: strings.Repeat("abc/", 1024)}},
		{"clone stub", Inode{Mode: 0o40755, Nlink: 3, Clone: 42, Origin: Origin{Pin: 7, Base: 9}, Stub: true,
			Excl: []ExclCtx{{Clone: 42, Path: "a/b"}, {Clone: 40, Path: ""}}}},
		{"materialized clone file", Inode{Mode: 0o100644, Size: 10, Clone: 42, Origin: Origin{Pin: 7, Base: 9}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			enc := tc.in.Encode()
			if want := wantInodeFormat(&tc.in); enc[0] != want {
				t.Fatalf("format byte %d, want %d", enc[0], want)
			}
			got, err := DecodeInode(enc)
			if err != nil {
				t.Fatalf("DecodeInode: %v", err)
			}
			if !reflect.DeepEqual(got, tc.in) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, tc.in)
			}
			rejectsDamaged(t, "inode", enc, func(b []byte) error { _, err := DecodeInode(b); return err })
		})
	}
}

func TestInodeRejectsNegativeSizes(t *testing.T) {
	// Sizes are signed on the wire but a negative one is never valid.
	for _, n := range []Inode{{Size: -1}, {Mapped: -1}, {Size: math.MinInt64}} {
		if got, err := DecodeInode(n.Encode()); !errors.Is(err, ErrBadRecord) || !reflect.DeepEqual(got, Inode{}) {
			t.Errorf("DecodeInode(%+v) = %+v, %v; want zero value and ErrBadRecord", n, got, err)
		}
	}
}

func TestDecodeRejectsOverflowingU32(t *testing.T) {
	// A 32-bit field holding 2^32 must be rejected, not truncated to 0.
	var e enc
	e.raw([]byte{direntFormat})
	e.u(7)
	e.u(1 << 32)
	if _, err := DecodeDirent(e.b); !errors.Is(err, ErrBadRecord) {
		t.Errorf("dirent with Type 2^32: err = %v, want ErrBadRecord", err)
	}

	e = enc{}
	e.raw([]byte{inodeFormat})
	e.u(1 << 32) // Mode
	for range 3 {
		e.u(0)
	}
	for range 2 {
		e.i(0)
	}
	e.u(0)
	for range 4 {
		e.i(0)
	}
	e.u(0)
	e.bytes(nil)
	if _, err := DecodeInode(e.b); !errors.Is(err, ErrBadRecord) {
		t.Errorf("inode with Mode 2^32: err = %v, want ErrBadRecord", err)
	}
}

func TestDecodeRejectsOverlongVarint(t *testing.T) {
	// Eleven continuation bytes overflow a uint64 varint.
	b := append([]byte{direntFormat}, bytes.Repeat([]byte{0xff}, 11)...)
	b = append(b, 0x01, 0x00)
	if _, err := DecodeDirent(b); !errors.Is(err, ErrBadRecord) {
		t.Errorf("overlong varint: err = %v, want ErrBadRecord", err)
	}
}

func TestInodeTargetLengthBeyondRecord(t *testing.T) {
	// A target length larger than the bytes left, including one that would
	// overflow int, must fail cleanly.
	for _, n := range []uint64{1, 1 << 31, 1 << 62, math.MaxUint64} {
		e := enc{}
		e.raw((&Inode{}).Encode())
		e.b = e.b[:len(e.b)-1] // drop the empty target's length
		e.u(n)
		if _, err := DecodeInode(e.b); !errors.Is(err, ErrBadRecord) {
			t.Errorf("target length %d: err = %v, want ErrBadRecord", n, err)
		}
	}
}

func TestDirentRoundTrip(t *testing.T) {
	for _, d := range []Dirent{
		{},
		{Ino: 1, Type: 0o040000},
		{Ino: 1 << 40, Type: 0o100000},
		{Ino: math.MaxUint64, Type: math.MaxUint32},
	} {
		enc := d.Encode()
		got, err := DecodeDirent(enc)
		if err != nil || got != d {
			t.Errorf("DecodeDirent(Encode(%+v)) = %+v, %v", d, got, err)
		}
		rejectsDamaged(t, "dirent", enc, func(b []byte) error { _, err := DecodeDirent(b); return err })
	}
}

func TestExtentRoundTrip(t *testing.T) {
	for _, x := range []Extent{
		{Hash: testHash(1), Length: 1},
		{Hash: testHash(0xab), ChunkOff: 4096, Length: 65536},
		{Hash: Sum([]byte("chunk")), ChunkOff: math.MaxUint32, Length: math.MaxUint32},
		{Hash: testHash(2), Length: 4096, Hint: Hint{Segment: 1, Offset: 0, Check: 7}},
		{Hash: testHash(4), Length: math.MaxUint32, Hint: Hint{Segment: math.MaxUint32, Offset: math.MaxUint64, Check: math.MaxUint64}},
		{Hash: testHash(7), Length: 4096, Hint: Hint{Segment: 2, Offset: 8192, Check: 11}, Owned: true},
	} {
		enc := x.Encode()
		got, err := DecodeExtent(enc)
		if err != nil || got != x {
			t.Errorf("DecodeExtent(Encode(%+v)) = %+v, %v", x, got, err)
		}
		if !x.Owned { // an owned extent with format byte 2 is the same extent, hinted
			rejectsDamaged(t, "extent", enc, func(b []byte) error { _, err := DecodeExtent(b); return err })
		}
	}
}

func TestExtentHintOnlyOnWholeChunks(t *testing.T) {
	// A hint locates a chunk from its start: an extent into the middle
	// of one is written without it.
	x := Extent{Hash: testHash(5), ChunkOff: 512, Length: 512, Hint: Hint{Segment: 3, Offset: 4096, Check: 9}}
	got, err := DecodeExtent(x.Encode())
	if want := (Extent{Hash: x.Hash, ChunkOff: 512, Length: 512}); err != nil || got != want {
		t.Errorf("DecodeExtent(Encode(%+v)) = %+v, %v; want %+v", x, got, err, want)
	}
	if !got.SameChunk(x) {
		t.Errorf("SameChunk says the hint is part of the extent's identity")
	}
	// Owning the bytes at a hint goes with the hint: a part of a chunk
	// owns nothing.
	x.Owned = true
	if got, err := DecodeExtent(x.Encode()); err != nil || got.Owned || got.Hint.Has() {
		t.Errorf("DecodeExtent(Encode(owned part %+v)) = %+v, %v; want neither hint nor owner", x, got, err)
	}
	owned := Extent{Hash: testHash(8), Length: 4096, Hint: Hint{Segment: 2, Offset: 0, Check: 3}, Owned: true}
	if !owned.SameChunk(Extent{Hash: owned.Hash, Length: 4096}) {
		t.Errorf("SameChunk says ownership is part of the extent's identity")
	}
	// Hinted records that Encode never writes: a hint into the middle of
	// a chunk, a hint of segment 0.
	for _, bad := range []Extent{
		{Hash: testHash(6), Length: 10, Hint: Hint{Segment: 0, Offset: 5, Check: 1}},
		{Hash: testHash(6), ChunkOff: 1, Length: 10, Hint: Hint{Segment: 2, Offset: 5, Check: 1}},
	} {
		e := enc{}
		e.raw([]byte{extentFormatHinted})
		e.raw(bad.Hash[:])
		e.u(uint64(bad.ChunkOff))
		e.u(uint64(bad.Length))
		e.u(uint64(bad.Hint.Segment))
		e.u(bad.Hint.Offset)
		e.raw(make([]byte, 8))
		if _, err := DecodeExtent(e.b); !errors.Is(err, ErrBadRecord) {
			t.Errorf("DecodeExtent(%+v) = %v; want ErrBadRecord", bad, err)
		}
	}
}

func TestExtentRejectsZeroLength(t *testing.T) {
	// An empty extent maps nothing and would confuse the extent scan.
	x := Extent{Hash: testHash(3), ChunkOff: 10}
	if got, err := DecodeExtent(x.Encode()); !errors.Is(err, ErrBadRecord) || got != (Extent{}) {
		t.Errorf("DecodeExtent(zero length) = %+v, %v; want zero value and ErrBadRecord", got, err)
	}
}

func TestChunkRoundTrip(t *testing.T) {
	for _, c := range []Chunk{
		{Segment: 1, Offset: 0, Stored: 100, Raw: 100, Comp: CompNone, Refs: 1},
		{Segment: 7, Offset: 4096 * 1000, Stored: 30, Raw: 65536, Comp: CompZstd, Refs: 3},
		{Segment: math.MaxUint32, Offset: math.MaxUint64, Stored: math.MaxUint32, Raw: math.MaxUint32, Comp: CompZstd, Refs: math.MaxUint64},
		{Raw: 1}, // zero refs is representable (the record is normally deleted instead)
		{Stored: 5, Raw: 5, Refs: 2, Check: 42, HasCheck: true, Inline: "hello"},
		{Stored: 3, Raw: 9000, Comp: CompZstd, Refs: 1, Check: 7, HasCheck: true, Inline: "\x00\xff\x01"},
	} {
		enc := c.Encode()
		got, err := DecodeChunk(enc)
		if err != nil || got != c {
			t.Errorf("DecodeChunk(Encode(%+v)) = %+v, %v", c, got, err)
		}
		rejectsDamaged(t, "chunk", enc, func(b []byte) error { _, err := DecodeChunk(b); return err })
	}
}

func TestChunkRejectsInvalid(t *testing.T) {
	for name, c := range map[string]Chunk{
		"unknown compression":    {Segment: 1, Stored: 1, Raw: 1, Comp: CompZstd + 1, Refs: 1},
		"max compression":        {Segment: 1, Stored: 1, Raw: 1, Comp: 255, Refs: 1},
		"zero raw size":          {Segment: 1, Stored: 1, Raw: 0, Refs: 1},
		"inline with a location": {Segment: 1, Stored: 1, Raw: 1, Refs: 1, HasCheck: true, Inline: "x"},
	} {
		if got, err := DecodeChunk(c.Encode()); !errors.Is(err, ErrBadRecord) || got != (Chunk{}) {
			t.Errorf("%s: DecodeChunk = %+v, %v; want zero value and ErrBadRecord", name, got, err)
		}
	}
}

func TestStatsRoundTrip(t *testing.T) {
	for _, s := range []Stats{
		{},
		{LogicalBytes: 1 << 40, PhysicalBytes: 1 << 30, RawBytes: 1 << 31, Chunks: 12345, Inodes: 678},
		// Counters are signed so that a transaction's delta encodes too.
		{LogicalBytes: -1, PhysicalBytes: math.MinInt64, RawBytes: math.MaxInt64, Chunks: -5, Inodes: -1},
		{LogicalBytes: 1 << 32, PhysicalBytes: 1 << 32, RawBytes: 1 << 32, Chunks: 3, Inodes: 2, OwnedBlocks: 1 << 20},
		{OwnedBlocks: -1},
	} {
		enc := s.Encode()
		got, err := DecodeStats(enc)
		if err != nil || got != s {
			t.Errorf("DecodeStats(Encode(%+v)) = %+v, %v", s, got, err)
		}
		rejectsDamaged(t, "stats", enc, func(b []byte) error { _, err := DecodeStats(b); return err })
	}
}

func TestJournalEntryRoundTrip(t *testing.T) {
	for op := uint8(OpCreate); op <= OpDirents; op++ {
		j := JournalEntry{Op: op}
		got, err := DecodeJournalEntry(j.Encode())
		if err != nil || got != j {
			t.Errorf("DecodeJournalEntry(Encode(%+v)) = %+v, %v", j, got, err)
		}
	}
	for _, b := range [][]byte{nil, {1}, {1, 0}, {1, OpDirents + 1}, {1, 255}, {0, OpData}, {2, OpData}, {1, OpData, 0}} {
		if got, err := DecodeJournalEntry(b); !errors.Is(err, ErrBadRecord) || got != (JournalEntry{}) {
			t.Errorf("DecodeJournalEntry(%x) = %+v, %v; want ErrBadRecord", b, got, err)
		}
	}
}

func TestConfigRoundTrip(t *testing.T) {
	for _, c := range []Config{
		{Format: FormatVersion, UUID: "5f0b8a5e-8a1c-4a55-9b0c-0e0d9a5b1c11", Chunking: "cdc:16K:64K:256K", Compression: "zstd", Created: 1700000000000000000},
		{Format: FormatBase},
		{Format: FormatUnpaddedPacks, PackAlign: 1},
		{Format: FormatVersion, UUID: "quote\" backslash\\ nul\x00 é", Chunking: "fixed:4K", Compression: "off", Created: math.MinInt64},
	} {
		got, err := DecodeConfig(EncodeConfig(c))
		if err != nil || got != c {
			t.Errorf("DecodeConfig(EncodeConfig(%+v)) = %+v, %v", c, got, err)
		}
	}
}

func TestConfigIsReadableJSON(t *testing.T) {
	// People read the config in dumps: the field names are part of the format.
	b := EncodeConfig(Config{Format: 1, UUID: "u", Chunking: "cdc", Compression: "auto", Created: 5})
	want := `{"format":1,"uuid":"u","chunking":"cdc","compression":"auto","created":5}`
	if string(b) != want {
		t.Errorf("EncodeConfig = %s, want %s", b, want)
	}
}

func TestConfigRejects(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		badJSON bool // the error must wrap ErrBadRecord
	}{
		{"empty", "", true},
		{"not json", "hello", true},
		{"truncated", `{"format":1,"uuid":"x"`, true},
		{"wrong type", `{"format":"1"}`, true},
		{"trailing garbage", `{"format":1}x`, true},
		{"missing format", `{"uuid":"x"}`, false},
		{"future format", fmt.Sprintf(`{"format":%d}`, FormatVersion+1), false},
		{"pack alignment before its format", `{"format":1,"pack_align":1}`, true},
		{"pack alignment unknown", `{"format":2,"pack_align":512}`, true},
		{"null", `null`, false},
	}
	for _, tc := range tests {
		_, err := DecodeConfig([]byte(tc.in))
		if err == nil {
			t.Errorf("%s: DecodeConfig(%q) succeeded", tc.name, tc.in)
			continue
		}
		if tc.badJSON && !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: err = %v, want it to wrap ErrBadRecord", tc.name, err)
		}
	}
}

func TestSum(t *testing.T) {
	// BLAKE3-256 of the empty input (from the BLAKE3 specification's test
	// vectors) pins the hash function: changing it would orphan every chunk.
	const empty = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
	if got := Sum(nil); hex.EncodeToString(got[:]) != empty {
		t.Errorf("Sum(nil) = %x, want %s", got, empty)
	}
	if Sum([]byte("a")) == Sum([]byte("b")) {
		t.Error("different inputs hash alike")
	}
}

func wantInodeFormat(n *Inode) byte {
	if n.Cloned() {
		return inodeFormatCloned
	}
	return inodeFormat
}
