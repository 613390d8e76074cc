package s3store

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/blob"
)

// Store is a blob.Store whose segments are pack objects in S3.
type Store struct {
	cfg   Config
	objs  *objects
	alloc Allocator
	dirf  *os.File // the store directory, locked while open
	cache *cache   // nil when disabled

	syncMu sync.Mutex // serialises Sync and Close

	mu      sync.Mutex
	changed sync.Cond // an upload ended or a pack was sealed
	closed  bool
	open    *pack            // pack being filled; nil until the first Put
	pending map[uint32]*pack // sealed packs not uploaded yet (readable from memory)
	packs   map[uint32]object
	ledger  *ledger
	retired map[uint32]time.Time // all-dead packs waiting for RetireGrace to pass, since when
	align   int64                // where chunks start in packs (Alignment)
	// next and limit delimit the numbers reserved but not used yet.
	next, limit  uint32
	sessionStart uint32

	freeMems    []*packMem // memory of uploaded packs, for the next ones (takePackMem)
	uploadSlots chan struct{}
	fetchSlots  chan struct{} // bounds prefetch GETs
	staged      *staging      // prefetched ranges in memory
	prefetching sync.WaitGroup
	gone        gonePacks // packs known to be deleted (gone.go)
}

var (
	_ blob.Store            = (*Store)(nil)
	_ blob.LocSyncer        = (*Store)(nil)
	_ blob.StreamPrefetcher = (*Store)(nil)
	_ blob.GoneTeller       = (*Store)(nil)
)

// allocBlock is how many pack numbers the store reserves at once.
const allocBlock = 16

// Open opens the store cfg describes. It lists the packs that exist, and
// fails with a clear error when the service is unreachable, the
// credentials are refused or the bucket does not exist.
func Open(cfg Config) (*Store, error) {
	cfg.setDefaults()
	if cfg.Bucket == "" || cfg.Dir == "" {
		return nil, errors.New("s3: a bucket and a local store directory are required")
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	dirf, err := os.Open(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	if err := unix.Flock(int(dirf.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		dirf.Close()
		if err == unix.EWOULDBLOCK {
			return nil, fmt.Errorf("s3: %s is already open by another store", cfg.Dir)
		}
		return nil, fmt.Errorf("s3: lock %s: %w", cfg.Dir, err)
	}
	s, err := open(cfg, dirf)
	if err != nil {
		dirf.Close()
		return nil, err
	}
	return s, nil
}

func open(cfg Config, dirf *os.File) (*Store, error) {
	s := &Store{cfg: cfg, objs: newObjects(cfg), alloc: cfg.Allocator, dirf: dirf,
		pending: map[uint32]*pack{}, retired: map[uint32]time.Time{}, uploadSlots: make(chan struct{}, cfg.Uploads),
		fetchSlots: make(chan struct{}, cfg.Fetches), staged: newStaging(cfg.PrefetchBytes)}
	s.changed.L = &s.mu
	s.align = blob.Align
	if cfg.Unpadded {
		s.align = 1
	}
	if s.alloc == nil {
		s.alloc = NewLocalAllocator(cfg.Dir)
	}
	var err error
	if s.packs, err = s.objs.list(); err != nil {
		return nil, err
	}
	if s.ledger, err = loadLedger(cfg.Dir, cfg.Dead, func(n uint32) bool { _, ok := s.packs[n]; return ok }); err != nil {
		return nil, err
	}
	s.retireDeadPacks()
	if cfg.CacheBytes > 0 {
		if s.cache, err = openCache(cfg.Dir, cfg.CacheBytes); err != nil {
			return nil, err
		}
		s.cache.keepPacks(func(n uint32) bool { _, ok := s.packs[n]; return ok })
	}
	var highest uint32
	for n := range s.packs {
		highest = max(highest, n)
	}
	if s.next, err = s.alloc.Allocate(allocBlock, highest); err != nil {
		if s.cache != nil {
			s.cache.close()
		}
		return nil, fmt.Errorf("s3: allocate pack numbers: %w", err)
	}
	s.limit = s.next + allocBlock
	s.sessionStart = s.next
	return s, nil
}

// SessionStart implements blob.Store: the first pack number this open
// reserved.
func (s *Store) SessionStart() uint32 { return s.sessionStart }

// Segments implements blob.Store: the packs in the object store and those
// waiting for upload, in order.
func (s *Store) Segments() ([]uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("s3: segments: %w", os.ErrClosed)
	}
	nums := make([]uint32, 0, len(s.packs)+len(s.pending)+1)
	for n := range s.packs {
		nums = append(nums, n)
	}
	for n := range s.pending {
		if _, ok := s.packs[n]; !ok {
			nums = append(nums, n)
		}
	}
	if s.open != nil && len(s.open.buf) > 0 {
		nums = append(nums, s.open.num)
	}
	slices.Sort(nums)
	return nums, nil
}

// Usage implements blob.Store: the bytes of the pack objects in the
// object store (S3 has no allocated-blocks figure: an object's size is
// what is billed) and their number.
func (s *Store) Usage() (int64, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, 0, fmt.Errorf("s3: usage: %w", os.ErrClosed)
	}
	var n int64
	for _, o := range s.packs {
		n += o.size
	}
	return n, len(s.packs), nil
}

// Close uploads what is pending (Sync) and closes the store; a Close
// whose Sync failed still closes it, and returns the error.
func (s *Store) Close() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("s3: close: %w", os.ErrClosed)
	}
	s.mu.Unlock()
	err := s.syncLocked()
	s.mu.Lock()
	s.closed = true
	s.changed.Broadcast()
	for _, m := range s.freeMems {
		m.release()
	}
	s.freeMems = nil
	s.mu.Unlock()
	s.prefetching.Wait()
	if s.cache != nil {
		s.cache.close()
	}
	s.dirf.Close()
	return err
}

// packAge is how long ago pack num was uploaded, as far as this store knows.
func (s *Store) packAge(o object) time.Duration {
	if o.modTime.IsZero() {
		return 0
	}
	return time.Since(o.modTime)
}
