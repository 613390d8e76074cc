package headroom

import (
	"errors"
	"syscall"
	"testing"
	"time"
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

// A statfs-backed guard reuses a recent answer while it leaves plenty of
// room, and asks every time near the reserve or once the answer is old.
func TestFreeSpaceCachedOnlyFarFromFull(t *testing.T) {
	asks, free := 0, int64(100<<30)
	g := WithFree(func() (int64, error) { asks++; return free, nil }, nil)
	g.freeMaxAge = time.Hour
	for range 3 {
		if err := g.ForData(1 << 20); err != nil {
			t.Fatal(err)
		}
	}
	if asks != 1 {
		t.Fatalf("asked %d times with 100 GiB free, want 1", asks)
	}
	free = g.Reserve() + freeSlack/2 // the cached answer still says 100 GiB
	g.freeAsked = time.Time{}        // too old: asked again
	g.ForData(0)
	if asks != 2 {
		t.Fatalf("asked %d times after the answer aged, want 2", asks)
	}
	free = g.Reserve() + 4096 // near the reserve: every call asks
	for range 2 {
		err := g.ForData(1 << 20)
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("ForData near full = %v, want ENOSPC", err)
		}
	}
	if asks != 4 {
		t.Fatalf("asked %d times near the reserve, want 4", asks)
	}
}
