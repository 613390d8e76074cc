package headroom

import (
	"fmt"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// BaseReserve is the free space always kept for the metadata store.
const BaseReserve = 16 << 20

// Guard answers whether an operation may use more space. The zero of
// *Guard (nil) allows everything.
type Guard struct {
	free      func() (int64, error) // bytes unprivileged users may still use
	metaBytes func() int64          // current size of the metadata store

	// The metadata size changes slowly and is costly to ask for (Pebble
	// locks to compute it), so it is asked at most once a second.
	mu        sync.Mutex
	meta      int64
	metaAsked time.Time

	// Free space is asked for by every create and write, and a statfs
	// costs a few microseconds of a small file's budget: an answer is
	// reused for up to freeMaxAge while it leaves more than freeSlack
	// above the reserve. A disk nearer full is asked every time.
	freeMaxAge time.Duration // 0: ask every time
	freeVal    int64
	freeAsked  time.Time
}

// freeSlack is the room above the reserve within which a cached answer
// is not trusted: far more than doppel writes in freeMaxAge.
const freeSlack = 1 << 30

// New returns a guard for the file system holding dir; metaBytes reports
// the metadata store's size (nil: count it as 0).
func New(dir string, metaBytes func() int64) *Guard {
	g := WithFree(func() (int64, error) {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			return 0, err
		}
		return int64(st.Bavail) * int64(st.Bsize), nil
	}, metaBytes)
	g.freeMaxAge = 50 * time.Millisecond
	return g
}

// WithFree returns a guard that learns the free space from free instead
// of statfs, every time it is asked (tests use it to play a full disk).
func WithFree(free func() (int64, error), metaBytes func() int64) *Guard {
	if metaBytes == nil {
		metaBytes = func() int64 { return 0 }
	}
	return &Guard{free: free, metaBytes: metaBytes}
}

// Reserve is the free space kept for the metadata store.
func (g *Guard) Reserve() int64 {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if now := time.Now(); now.Sub(g.metaAsked) >= time.Second {
		g.meta, g.metaAsked = g.metaBytes(), now
	}
	return BaseReserve + g.meta/8
}

// Avail is the free space unprivileged users may still use, and the
// reserve; ok is false if the file system could not be asked.
func (g *Guard) Avail() (avail, reserve int64, ok bool) {
	if g == nil {
		return 0, 0, false
	}
	reserve = g.Reserve()
	free, err := g.freeSpace(reserve)
	if err != nil {
		return 0, 0, false
	}
	return free, reserve, true
}

// freeSpace asks how much space is free, or answers from the last time it
// asked when that is recent and far from the reserve.
func (g *Guard) freeSpace(reserve int64) (int64, error) {
	if g.freeMaxAge == 0 {
		return g.free()
	}
	now := time.Now()
	g.mu.Lock()
	val, asked := g.freeVal, g.freeAsked
	g.mu.Unlock()
	if now.Sub(asked) < g.freeMaxAge && val-reserve > freeSlack {
		return val, nil
	}
	free, err := g.free()
	if err != nil {
		return 0, err
	}
	g.mu.Lock()
	g.freeVal, g.freeAsked = free, now
	g.mu.Unlock()
	return free, nil
}

// ForData returns an error wrapping ENOSPC if storing n more bytes would
// eat into the reserve.
func (g *Guard) ForData(n int64) error {
	avail, reserve, ok := g.Avail()
	if !ok || avail-n >= reserve {
		return nil
	}
	return fmt.Errorf("%w: %d bytes free on the store's file system, %d kept for metadata", syscall.ENOSPC, avail, reserve)
}

// ForMeta returns an error wrapping ENOSPC if less than half the reserve
// is free: then only operations that free space may go on.
func (g *Guard) ForMeta() error {
	avail, reserve, ok := g.Avail()
	if !ok || avail >= reserve/2 {
		return nil
	}
	return fmt.Errorf("%w: %d bytes free on the store's file system; only deletes are allowed", syscall.ENOSPC, avail)
}
