package schema

import (
	"bytes"
	"reflect"
	"testing"
)

// The clone records round-trip: whatever decodes re-encodes to bytes that
// decode to the same record.

func FuzzDecodePin(f *testing.F) {
	f.Add((&Pin{Root: 5, NextIno: 100, Held: true, Deps: []uint64{3, 4}, Dependents: 2}).Encode())
	f.Add((&Pin{}).Encode())
	f.Add([]byte{pinFormat, 1, 2, 2, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePin(b)
		if err != nil {
			return
		}
		enc := p.Encode()
		if p2, err := DecodePin(enc); err != nil || !reflect.DeepEqual(p, p2) {
			t.Fatalf("DecodePin(%x) = %+v; re-encoded %x decodes to %+v, %v", b, p, enc, p2, err)
		}
	})
}

func FuzzDecodeClone(f *testing.F) {
	f.Add((&Clone{Origin: 7, OriginPath: "/a/b", Pin: 9, Created: 1700000000, Excludes: []string{"x", "b/**"}, ReadOnly: true, Stubs: 3, Done: 4}).Encode())
	f.Add((&Clone{}).Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeClone(b)
		if err != nil {
			return
		}
		enc := c.Encode()
		if c2, err := DecodeClone(enc); err != nil || !reflect.DeepEqual(c, c2) {
			t.Fatalf("DecodeClone(%x) = %+v; re-encoded %x decodes to %+v, %v", b, c, enc, c2, err)
		}
	})
}

func FuzzDecodeRetained(f *testing.F) {
	f.Add(Retained{Present: true, Value: []byte("v")}.Encode())
	f.Add(Retained{}.Encode())
	f.Add([]byte{retainedFormat, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRetained(b)
		if err != nil {
			return
		}
		if enc := r.Encode(); !bytes.Equal(enc, b) {
			t.Fatalf("DecodeRetained(%x) = %+v, which encodes as %x", b, r, enc)
		}
	})
}

func FuzzParseRetainedKey(f *testing.F) {
	f.Add(RetainedKey(ExtentKey(3, 4096), 17))
	f.Add(RetainedKey(DirentKey(3, "name"), 1))
	f.Fuzz(func(t *testing.T, k []byte) {
		key, pin, err := ParseRetainedKey(k)
		if err != nil {
			return
		}
		if enc := RetainedKey(key, pin); !bytes.Equal(enc, k) {
			t.Fatalf("ParseRetainedKey(%x) = %x, %d; which encodes as %x", k, key, pin, enc)
		}
	})
}

func TestRetainedKeysGroupByKey(t *testing.T) {
	// Versions of "a" sort together, before those of "ab" and "b".
	a1, a9 := RetainedKey(DirentKey(1, "a"), 1), RetainedKey(DirentKey(1, "a"), 9)
	ab := RetainedKey(DirentKey(1, "ab"), 0)
	b := RetainedKey(DirentKey(1, "b"), 0)
	if !(bytes.Compare(a1, a9) < 0 && bytes.Compare(a9, ab) < 0 && bytes.Compare(ab, b) < 0) {
		t.Fatalf("retained keys out of order: %x %x %x %x", a1, a9, ab, b)
	}
}
