package schema

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// inRange reports whether lower <= key < upper, the bounds convention of
// meta.Reader.NewIter.
func inRange(key, lower, upper []byte) bool {
	return bytes.Compare(key, lower) >= 0 && bytes.Compare(key, upper) < 0
}

// Inode numbers around byte boundaries of the big-endian encoding, where a
// little-endian or varint key would sort wrongly. MaxUint64 is left out of
// the ranges below: "ino+1" upper bounds wrap there, and the inode counter
// never gets near it.
var testInos = []uint64{0, 1, 2, 255, 256, 257, 1<<32 - 1, 1 << 32, 1<<56 - 1, 1 << 56, math.MaxUint64 - 1}

var testNames = []string{"", "a", "b", "a\x00", "\x00", "\xff", "\xff\xff\xff\xff\xff\xff\xff\xff\xff", "long-name-" + string(make([]byte, 300))}

func TestInodeKey(t *testing.T) {
	lo, hi := InodeRange()
	for _, ino := range append(testInos, math.MaxUint64) {
		k := InodeKey(ino)
		if len(k) != 9 || k[0] != 'i' {
			t.Errorf("InodeKey(%d) = %x", ino, k)
		}
		if !inRange(k, lo, hi) {
			t.Errorf("InodeKey(%d) outside InodeRange", ino)
		}
	}
}

func TestDirentKeyAndRange(t *testing.T) {
	for _, dir := range testInos {
		lo, hi := DirentRange(dir)
		for _, name := range testNames {
			k := DirentKey(dir, name)
			got, err := DirentName(k)
			if err != nil || got != name {
				t.Errorf("DirentName(DirentKey(%d, %q)) = %q, %v", dir, name, got, err)
			}
			if !inRange(k, lo, hi) {
				t.Errorf("DirentKey(%d, %q) outside DirentRange(%d)", dir, name, dir)
			}
			// Entries of the neighbouring directories stay out.
			if dir > 0 && inRange(DirentKey(dir-1, name), lo, hi) {
				t.Errorf("DirentKey(%d, %q) inside DirentRange(%d)", dir-1, name, dir)
			}
			if inRange(DirentKey(dir+1, name), lo, hi) {
				t.Errorf("DirentKey(%d, %q) inside DirentRange(%d)", dir+1, name, dir)
			}
		}
	}
}

func TestDirentKeysSortByName(t *testing.T) {
	// Entries of one directory sort by name bytes, so a listing resumes at a
	// name with SeekGE.
	names := slices.Clone(testNames)
	slices.Sort(names)
	for i := 1; i < len(names); i++ {
		if bytes.Compare(DirentKey(5, names[i-1]), DirentKey(5, names[i])) >= 0 {
			t.Errorf("DirentKey(5, %q) does not sort before DirentKey(5, %q)", names[i-1], names[i])
		}
	}
}

func TestParentKey(t *testing.T) {
	for _, ino := range testInos {
		lo, hi := ParentRange(ino)
		for _, parent := range []uint64{0, 1, math.MaxUint64} {
			for _, name := range testNames {
				k := ParentKey(ino, parent, name)
				gi, gp, gn, err := ParseParentKey(k)
				if err != nil || gi != ino || gp != parent || gn != name {
					t.Errorf("ParseParentKey(ParentKey(%d, %d, %q)) = %d, %d, %q, %v", ino, parent, name, gi, gp, gn, err)
				}
				if !inRange(k, lo, hi) {
					t.Errorf("ParentKey(%d, %d, %q) outside ParentRange(%d)", ino, parent, name, ino)
				}
				if inRange(ParentKey(ino+1, parent, name), lo, hi) {
					t.Errorf("ParentKey(%d, ...) inside ParentRange(%d)", ino+1, ino)
				}
			}
		}
	}
}

func TestExtentKey(t *testing.T) {
	offs := []int64{0, 1, 255, 256, 4095, 4096, 65536, 1 << 32, 1<<40 + 3, math.MaxInt64}
	for _, ino := range testInos {
		lo, hi := ExtentRange(ino)
		for _, off := range offs {
			k := ExtentKey(ino, off)
			got, err := ExtentOffset(k)
			if err != nil || got != off {
				t.Errorf("ExtentOffset(ExtentKey(%d, %d)) = %d, %v", ino, off, got, err)
			}
			if !inRange(k, lo, hi) {
				t.Errorf("ExtentKey(%d, %d) outside ExtentRange(%d)", ino, off, ino)
			}
			if inRange(ExtentKey(ino+1, 0), lo, hi) {
				t.Errorf("ExtentKey(%d, 0) inside ExtentRange(%d)", ino+1, ino)
			}
		}
	}
}

func TestExtentKeysSortNumerically(t *testing.T) {
	// The extent scan relies on key order being file order: 256 must sort
	// after 255 even though its low byte is smaller.
	offs := []int64{math.MaxInt64, 1 << 40, 256, 0, 255, 1 << 32, 65535, 65536, 1, 4096}
	keys := make([][]byte, len(offs))
	for i, off := range offs {
		keys[i] = ExtentKey(9, off)
	}
	slices.SortFunc(keys, bytes.Compare)
	slices.Sort(offs)
	for i, k := range keys {
		if got, _ := ExtentOffset(k); got != offs[i] {
			t.Fatalf("key order %d: offset %d, want %d (sorted offsets %v)", i, got, offs[i], offs)
		}
	}
	// All extents of one inode sort before those of the next.
	if bytes.Compare(ExtentKey(9, math.MaxInt64), ExtentKey(10, 0)) >= 0 {
		t.Error("last extent of inode 9 sorts after first of inode 10")
	}
}

func TestXattrKey(t *testing.T) {
	for _, ino := range testInos {
		lo, hi := XattrRange(ino)
		for _, name := range testNames {
			k := XattrKey(ino, name)
			got, err := XattrName(k)
			if err != nil || got != name {
				t.Errorf("XattrName(XattrKey(%d, %q)) = %q, %v", ino, name, got, err)
			}
			if !inRange(k, lo, hi) || inRange(XattrKey(ino+1, name), lo, hi) {
				t.Errorf("XattrRange(%d) does not hold exactly the attributes of %d", ino, ino)
			}
		}
	}
}

func TestChunkKey(t *testing.T) {
	lo, hi := ChunkRange()
	for _, h := range []Hash{{}, testHash(0xff), Sum([]byte("x"))} {
		k := ChunkKey(h)
		got, err := ChunkHash(k)
		if err != nil || got != h {
			t.Errorf("ChunkHash(ChunkKey(%x)) = %x, %v", h, got, err)
		}
		if !inRange(k, lo, hi) {
			t.Errorf("ChunkKey(%x) outside ChunkRange", h)
		}
	}
}

func TestJournalKey(t *testing.T) {
	for _, v := range testInos {
		for _, ino := range []uint64{0, 1, math.MaxUint64} {
			k := JournalKey(v, ino)
			gv, gi, _, err := ParseJournalKey(k)
			if err != nil || gv != v || gi != ino {
				t.Errorf("ParseJournalKey(JournalKey(%d, %d)) = %d, %d, %v", v, ino, gv, gi, err)
			}
		}
	}
	// JournalRange(from, to) holds versions from <= v < to, for any inode.
	lo, hi := JournalRange(10, 20)
	for v := uint64(0); v < 300; v++ {
		for _, ino := range []uint64{0, 1, math.MaxUint64} {
			want := v >= 10 && v < 20
			if got := inRange(JournalKey(v, ino), lo, hi); got != want {
				t.Errorf("JournalKey(%d, %d) in JournalRange(10, 20) = %v, want %v", v, ino, got, want)
			}
		}
	}
	// Entries sort by version first, so the journal reads as a log.
	if bytes.Compare(JournalKey(1, math.MaxUint64), JournalKey(2, 0)) >= 0 {
		t.Error("journal keys do not sort by version first")
	}
	if bytes.Compare(JournalKey(256, 0), JournalKey(255, 0)) <= 0 {
		t.Error("journal keys do not sort numerically by version")
	}
}

func TestOrphanKey(t *testing.T) {
	lo, hi := OrphanRange()
	for _, ino := range append(testInos, math.MaxUint64) {
		k := OrphanKey(ino)
		got, err := OrphanIno(k)
		if err != nil || got != ino {
			t.Errorf("OrphanIno(OrphanKey(%d)) = %d, %v", ino, got, err)
		}
		if !inRange(k, lo, hi) {
			t.Errorf("OrphanKey(%d) outside OrphanRange", ino)
		}
	}
}

func TestU64(t *testing.T) {
	for _, v := range []uint64{0, 1, 255, 256, math.MaxUint64} {
		got, err := ParseU64(U64(v))
		if err != nil || got != v {
			t.Errorf("ParseU64(U64(%d)) = %d, %v", v, got, err)
		}
	}
	for _, b := range [][]byte{nil, make([]byte, 7), make([]byte, 9)} {
		if _, err := ParseU64(b); !errors.Is(err, ErrBadRecord) {
			t.Errorf("ParseU64(%x): err = %v, want ErrBadRecord", b, err)
		}
	}
}

// TestKeySpacesDisjoint checks that no kind of key falls inside the range of
// another kind, and that the singletons fall in none: a scan of one kind
// must never meet another's records.
func TestKeySpacesDisjoint(t *testing.T) {
	type space struct {
		name   string
		lo, hi []byte
		keys   [][]byte
	}
	var spaces []space
	add := func(name string, lo, hi []byte, keys ...[]byte) {
		spaces = append(spaces, space{name, lo, hi, keys})
	}
	ilo, ihi := InodeRange()
	add("inode", ilo, ihi, InodeKey(0), InodeKey(math.MaxUint64))
	dlo, dhi := DirentRange(7)
	add("dirent", dlo, dhi, DirentKey(7, ""), DirentKey(7, "\xff\xff"))
	plo, phi := ParentRange(7)
	add("parent", plo, phi, ParentKey(7, 0, ""), ParentKey(7, math.MaxUint64, "\xff"))
	elo, ehi := ExtentRange(7)
	add("extent", elo, ehi, ExtentKey(7, 0), ExtentKey(7, math.MaxInt64))
	xlo, xhi := XattrRange(7)
	add("xattr", xlo, xhi, XattrKey(7, ""), XattrKey(7, "user.\xff"))
	klo, khi := ChunkRange()
	add("chunk", klo, khi, ChunkKey(Hash{}), ChunkKey(testHash(0xff)))
	jlo, jhi := JournalRange(0, math.MaxUint64)
	add("journal", jlo, jhi, JournalKey(0, 0), JournalKey(math.MaxUint64-1, math.MaxUint64))
	olo, ohi := OrphanRange()
	add("orphan", olo, ohi, OrphanKey(0), OrphanKey(math.MaxUint64))

	for _, a := range spaces {
		for _, k := range a.keys {
			if !inRange(k, a.lo, a.hi) {
				t.Errorf("%s key %x outside its own range", a.name, k)
			}
		}
		for _, b := range spaces {
			if a.name == b.name {
				continue
			}
			for _, k := range b.keys {
				if inRange(k, a.lo, a.hi) {
					t.Errorf("%s key %x inside %s range", b.name, k, a.name)
				}
			}
		}
		for _, s := range [][]byte{KeyConfig, KeyNextIno, KeyVersion, KeyStats} {
			if inRange(s, a.lo, a.hi) {
				t.Errorf("singleton %q inside %s range", s, a.name)
			}
		}
	}
}

func TestParsersRejectForeignKeys(t *testing.T) {
	// Each parser must refuse keys of other kinds and of the wrong length,
	// rather than return garbage fields.
	keys := map[string][]byte{
		"inode":   InodeKey(3),
		"dirent":  DirentKey(3, "n"),
		"parent":  ParentKey(3, 4, "n"),
		"extent":  ExtentKey(3, 4096),
		"xattr":   XattrKey(3, "user.a"),
		"chunk":   ChunkKey(testHash(1)),
		"journal": JournalKey(3, 4),
		"orphan":  OrphanKey(3),
		"config":  KeyConfig,
		"empty":   {},
	}
	parsers := map[string]func([]byte) error{
		"dirent":  func(k []byte) error { _, err := DirentName(k); return err },
		"parent":  func(k []byte) error { _, _, _, err := ParseParentKey(k); return err },
		"extent":  func(k []byte) error { _, err := ExtentOffset(k); return err },
		"xattr":   func(k []byte) error { _, err := XattrName(k); return err },
		"chunk":   func(k []byte) error { _, err := ChunkHash(k); return err },
		"journal": func(k []byte) error { _, _, _, err := ParseJournalKey(k); return err },
		"orphan":  func(k []byte) error { _, err := OrphanIno(k); return err },
	}
	for pname, parse := range parsers {
		for kname, k := range keys {
			err := parse(k)
			if kname == pname {
				if err != nil {
					t.Errorf("%s parser rejects its own key %x: %v", pname, k, err)
				}
				continue
			}
			if !errors.Is(err, ErrBadKey) {
				t.Errorf("%s parser on %s key %x: err = %v, want ErrBadKey", pname, kname, k, err)
			}
		}
	}
	// Fixed-length keys with a byte too few or too many.
	for name, k := range map[string][]byte{"extent": ExtentKey(3, 4), "chunk": ChunkKey(Hash{}), "journal": JournalKey(3, 4), "orphan": OrphanKey(3)} {
		parse := parsers[name]
		if err := parse(k[:len(k)-1]); !errors.Is(err, ErrBadKey) {
			t.Errorf("%s parser on short key: err = %v", name, err)
		}
		if err := parse(append(bytes.Clone(k), 0)); !errors.Is(err, ErrBadKey) {
			t.Errorf("%s parser on long key: err = %v", name, err)
		}
	}
	// Variable-length keys need at least their fixed part.
	if _, err := DirentName(DirentKey(3, "")[:8]); !errors.Is(err, ErrBadKey) {
		t.Errorf("DirentName on short key: err = %v", err)
	}
	if _, err := XattrName(XattrKey(3, "")[:8]); !errors.Is(err, ErrBadKey) {
		t.Errorf("XattrName on short key: err = %v", err)
	}
	if _, _, _, err := ParseParentKey(ParentKey(3, 4, "")[:16]); !errors.Is(err, ErrBadKey) {
		t.Errorf("ParseParentKey on short key: err = %v", err)
	}
}

// TestKeysFitMaxKeyBytes builds every key that holds a name with a name of
// MaxNameBytes, and the retained versions and pin index entries of those
// that have them, and requires each to fit MaxKeyBytes.
func TestKeysFitMaxKeyBytes(t *testing.T) {
	name := strings.Repeat("n", MaxNameBytes)
	const big = ^uint64(0)
	keys := map[string][]byte{
		"dirent":            DirentKey(big, name),
		"parent":            ParentKey(big, big, name),
		"xattr":             XattrKey(big, name),
		"journal name":      JournalNameKey(big, big, name),
		"tree journal name": TreeJournalNameKey(big, big, big, name),
		"journal cursor":    JournalCursorKey(name),
		"lock":              LockKey(big, big, big, 'w'),
		"open":              OpenKey(big, big),
	}
	for _, versioned := range []string{"dirent", "parent", "xattr"} {
		keys["retained "+versioned] = RetainedKey(keys[versioned], big)
		keys["retain index "+versioned] = RetainIndexKey(big, keys[versioned])
	}
	for what, k := range keys {
		if len(k) > MaxKeyBytes {
			t.Errorf("%s key of a %d-byte name: %d bytes, more than MaxKeyBytes (%d)", what, MaxNameBytes, len(k), MaxKeyBytes)
		}
	}
}
