package schema

import (
	"testing"
)

func TestProvisionalName(t *testing.T) {
	h := ProvisionalName(7, 1<<40+4096, 0xdeadbeefcafe)
	seg, off, check, ok := h.Provisional()
	if !ok || !h.IsProvisional() || seg != 7 || off != 1<<40+4096 || check != 0xdeadbeefcafe {
		t.Fatalf("ProvisionalName(7, ...).Provisional() = %d %d %x %v", seg, off, check, ok)
	}
	if ProvisionalName(7, 4096, 1) == ProvisionalName(8, 4096, 1) || ProvisionalName(7, 4096, 1) == ProvisionalName(7, 8192, 1) || ProvisionalName(7, 4096, 1) == ProvisionalName(7, 4096, 2) {
		t.Fatal("provisional names of different places or checks are equal")
	}
	for _, p := range [][]byte{nil, []byte("x"), make([]byte, 4096)} {
		if Sum(p).IsProvisional() {
			t.Fatalf("the hash of %d bytes reads as a provisional name", len(p))
		}
	}
	// An extent or record keeps the name as any hash.
	x := Extent{Hash: h, Length: 4096, Owned: true, Hint: Hint{Segment: 7, Offset: 1<<40 + 4096, Check: 0xdeadbeefcafe}}
	y, err := DecodeExtent(x.Encode())
	if err != nil || y != x {
		t.Fatalf("extent with a provisional name: decoded %+v, %v", y, err)
	}
}
