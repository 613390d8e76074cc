package schema

import (
	"bytes"
	"math"
	"testing"
)

// Fuzz targets of the records that say where space may be given back:
// free records (recovery punches what they name) and the dead spans of
// packs (compaction rewrites by them). Whatever a decoder accepts must
// rebuild the same bytes.

func FuzzDecodeFree(f *testing.F) {
	f.Add(FreeKey(3, 4096), FreeValue(4096))
	f.Add(FreeKey(math.MaxUint32, math.MaxUint64), FreeValue(math.MaxUint32))
	f.Add([]byte{prefixFree}, []byte{0, 0, 16, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		seg, off, n, err := DecodeFree(key, value)
		if err != nil {
			return
		}
		if k, v := FreeKey(seg, off), FreeValue(n); !bytes.Equal(k, key) || !bytes.Equal(v, value) {
			t.Fatalf("DecodeFree(%x, %x) = %d, %d, %d: rebuilds %x, %x", key, value, seg, off, n, k, v)
		}
	})
}

func FuzzDecodeDeadKey(f *testing.F) {
	f.Add(DeadKey(7))
	f.Add(DeadKeyOf(math.MaxUint32, math.MaxUint64))
	f.Add([]byte(deadPrefix))
	f.Fuzz(func(t *testing.T, k []byte) {
		num, err := DecodeDeadKey(k)
		if err != nil {
			return
		}
		// A writer's key is the pack's key and the writer's number.
		if want := DeadKey(num); !bytes.HasPrefix(k, want) {
			t.Fatalf("DecodeDeadKey(%x) = %d, whose key %x does not begin it", k, num, want)
		}
		if lower, upper := DeadPackRange(num); bytes.Compare(k, lower) < 0 || bytes.Compare(k, upper) >= 0 {
			t.Fatalf("DecodeDeadKey(%x) = %d, outside its pack's range [%x, %x)", k, num, lower, upper)
		}
	})
}

func FuzzDecodeSpans(f *testing.F) {
	f.Add(EncodeSpans(nil))
	f.Add(EncodeSpans([][2]int64{{0, 1}, {4096, 8192}, {math.MaxInt64 - 1, math.MaxInt64}}))
	f.Add(EncodeSpans([][2]int64{{5, 5}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		spans, err := DecodeSpans(b)
		if err != nil {
			return
		}
		for _, s := range spans {
			if s[0] < 0 || s[1] <= s[0] {
				t.Fatalf("DecodeSpans(%x) accepted span %v", b, s)
			}
		}
		if enc := EncodeSpans(spans); !bytes.Equal(enc, b) {
			t.Fatalf("DecodeSpans(%x) = %v: rebuilds %x", b, spans, enc)
		}
	})
}

func FuzzDecodeIntentKey(f *testing.F) {
	f.Add(IntentKey(7, 3))
	f.Add(IntentKey(math.MaxUint64, math.MaxUint64))
	f.Add([]byte(intentPrefix))
	f.Fuzz(func(t *testing.T, k []byte) {
		ino, zone, err := DecodeIntentKey(k)
		if err != nil {
			return
		}
		if want := IntentKey(ino, zone); !bytes.Equal(k, want) {
			t.Fatalf("DecodeIntentKey(%x) = %d, %d: rebuilds %x", k, ino, zone, want)
		}
		if lower, upper := IntentRange(); bytes.Compare(k, lower) < 0 || bytes.Compare(k, upper) >= 0 {
			t.Fatalf("intent key %x outside IntentRange", k)
		}
	})
}
