package chunker

import (
	"fmt"
	"testing"
)

func TestFixedAlignment(t *testing.T) {
	c := mustNew(t, "fixed:4K")
	if c.MaxSize() != 4096 {
		t.Fatalf("MaxSize = %d", c.MaxSize())
	}
	tests := []struct {
		off   int64
		n     int
		final bool
		want  int
	}{
		{0, 10000, false, 4096},
		{0, 4096, false, 4096},
		{0, 4095, false, 0},
		{0, 4095, true, 4095},
		{1000, 10000, false, 3096},
		{1000, 3096, false, 3096},
		{1000, 3095, false, 0},
		{1000, 3095, true, 3095},
		{4095, 10, false, 1},
		{4096, 10, false, 0},
		{4096, 10, true, 10},
		{1<<40 + 17, 1 << 20, false, 4096 - 17},
		{-1, 10, false, 1}, // never produced by a file, but still aligned
		{0, 0, true, 0},
	}
	for _, tt := range tests {
		if got := c.Cut(tt.off, make([]byte, tt.n), tt.final); got != tt.want {
			t.Errorf("Cut(%d, %d bytes, %v) = %d, want %d", tt.off, tt.n, tt.final, got, tt.want)
		}
	}
}

// TestFixedUnalignedWrite checks that every boundary of an unaligned write
// lands on a multiple of Size in file offsets.
func TestFixedUnalignedWrite(t *testing.T) {
	c := mustNew(t, "fixed:512")
	off := int64(700)
	sizes := chunkAll(t, c, off, make([]byte, 3000))
	if got, want := fmt.Sprint(sizes), "[324 512 512 512 512 512 116]"; got != want {
		t.Errorf("sizes %s, want %s", got, want)
	}
	for _, n := range sizes[:len(sizes)-1] {
		off += int64(n)
		if off%512 != 0 {
			t.Errorf("boundary at unaligned offset %d", off)
		}
	}
}
