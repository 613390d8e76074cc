package s3store

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
)

// gonePacks remembers packs known to be deleted: by this store (a dead or
// retired pack) or by another process (a GET found no such object). The
// content layer asks before it reads through a location hint into one
// (blob.GoneTeller), so that hints into compacted packs cost one failed
// GET per pack rather than one per read. Forgetting costs only that
// failed GET again, so the set is bounded by clearing it.
type gonePacks struct {
	n   atomic.Int32 // len(set): Gone does not lock while nothing is gone
	mu  sync.RWMutex
	set map[uint32]struct{}
}

// maxGone bounds gonePacks.
const maxGone = 1 << 16

func (g *gonePacks) add(num uint32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.set == nil || len(g.set) >= maxGone {
		g.set = map[uint32]struct{}{}
	}
	g.set[num] = struct{}{}
	g.n.Store(int32(len(g.set)))
}

// noteMissing adds pack num if err says its object does not exist.
func (g *gonePacks) noteMissing(num uint32, err error) {
	if err != nil && errors.Is(err, os.ErrNotExist) {
		g.add(num)
	}
}

func (g *gonePacks) has(num uint32) bool {
	if g.n.Load() == 0 {
		return false
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	_, ok := g.set[num]
	return ok
}

// Gone implements blob.GoneTeller.
func (s *Store) Gone(num uint32) bool { return s.gone.has(num) }
