package headroom

import (
	"errors"
	"syscall"
	"testing"
)

func TestGuard(t *testing.T) {
	meta, free := int64(80<<20), int64(0)
	g := WithFree(func() (int64, error) { return free, nil }, func() int64 { return meta })
	if got, want := g.Reserve(), int64(BaseReserve+10<<20); got != want {
		t.Fatalf("Reserve = %d, want %d", got, want)
	}
	reserve := g.Reserve()
	for _, c := range []struct {
		free, n        int64
		dataOK, metaOK bool
	}{
		{1 << 30, 1 << 20, true, true},
		{reserve + 1<<20, 1 << 20, true, true},    // exactly fits
		{reserve + 1<<20, 1<<20 + 1, false, true}, // one byte over
		{reserve / 2, 0, false, true},             // half the reserve: creates still go
		{reserve/2 - 4096, 0, false, false},       // below: only deletes
		{0, 1, false, false},
	} {
		free = c.free
		if err := g.ForData(c.n); (err == nil) != c.dataOK || (err != nil && !errors.Is(err, syscall.ENOSPC)) {
			t.Errorf("free %d: ForData(%d) = %v, want ok=%v", c.free, c.n, err, c.dataOK)
		}
		if err := g.ForMeta(); (err == nil) != c.metaOK || (err != nil && !errors.Is(err, syscall.ENOSPC)) {
			t.Errorf("free %d: ForMeta() = %v, want ok=%v", c.free, err, c.metaOK)
		}
	}
}

func TestNilAndFailingGuardAllow(t *testing.T) {
	var g *Guard
	if g.ForData(1<<40) != nil || g.ForMeta() != nil || g.Reserve() != 0 {
		t.Error("a nil guard refuses")
	}
	g = WithFree(func() (int64, error) { return 0, syscall.EIO }, nil)
	if g.ForData(1<<40) != nil || g.ForMeta() != nil {
		t.Error("a guard that cannot statfs refuses; the write itself should find out")
	}
}

func TestNewAsksTheFileSystem(t *testing.T) {
	avail, reserve, ok := New(t.TempDir(), nil).Avail()
	if !ok || avail <= 0 || reserve != BaseReserve {
		t.Errorf("Avail() = %d, %d, %v", avail, reserve, ok)
	}
}
