package nbd

import "testing"

// TestPayloadClasses: a buffer holds what was asked, comes from the
// smallest class that fits, and only class-sized buffers go back.
func TestPayloadClasses(t *testing.T) {
	for _, tc := range []struct{ n, wantCap int }{
		{1, 4096}, {4096, 4096}, {4097, 8192}, {1 << 20, 1 << 20}, {1<<20 + 1, 2 << 20}, {MaxPayload, MaxPayload},
	} {
		b := getPayload(tc.n)
		if len(b) != tc.n || cap(b) != tc.wantCap {
			t.Errorf("getPayload(%d): len %d cap %d, want cap %d", tc.n, len(b), cap(b), tc.wantCap)
		}
		putPayload(b)
	}
	if b := getPayload(MaxPayload + 1); len(b) != MaxPayload+1 {
		t.Errorf("getPayload past MaxPayload: len %d", len(b))
	}
	if b := getPayload(0); len(b) != 0 {
		t.Errorf("getPayload(0): len %d", len(b))
	}
	putPayload(make([]byte, 5000)) // not a class size: left alone
	b := getPayload(5000)
	if cap(b) != 8192 {
		t.Errorf("getPayload(5000) after a stray put: cap %d", cap(b))
	}
}
