package s3store

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// With the server stopped, Sync of pending data fails; once it is back,
// Sync succeeds and the data is in the object store.
func TestSyncFailsWhileServerDown(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "down")
	s := mustOpen(t, cfg)
	r := rand.New(rand.NewPCG(5, 5))
	locs, data := putSome(t, s, r, 3)
	srv.Stop()
	if err := s.Sync(); err == nil {
		t.Fatal("Sync returned nil with the server stopped")
	}
	checkAll(t, s, locs, data) // still readable from memory
	srv.Restart(t)
	if err := s.Sync(); err != nil {
		t.Fatalf("Sync after restart: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	verifyFresh(t, cfg, locs, data)
}

// The server is stopped in the middle of a write load from several
// goroutines and started again. Every Sync either fails or leaves every
// chunk put before it in the object store; after the restart a Sync
// succeeds and nothing acknowledged is missing.
func TestServerStopDuringWriteLoad(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "load")
	s := mustOpen(t, cfg)
	defer s.Close()

	var (
		mu     sync.Mutex
		all    []item
		synced int // all[:synced] were covered by a Sync that returned nil
		failed atomic.Int64
		stop   atomic.Bool
		wg     sync.WaitGroup
	)
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 77))
			for !stop.Load() {
				d := testutil.RandBytes(r, 1+r.IntN(64<<10))
				loc, err := s.Put(d)
				if err != nil {
					failed.Add(1)
					time.Sleep(10 * time.Millisecond) // the server is away: do not spin
					continue
				}
				mu.Lock()
				all = append(all, item{loc, d})
				mu.Unlock()
			}
		})
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(all) }
	waitFor := func(n int) {
		for count() < n {
			time.Sleep(5 * time.Millisecond)
		}
	}
	syncNow := func() error {
		n := count() // puts that returned before the Sync
		err := s.Sync()
		if err == nil {
			mu.Lock()
			synced = max(synced, n)
			mu.Unlock()
		}
		return err
	}
	waitFor(200)
	if err := syncNow(); err != nil {
		t.Fatalf("Sync with the server up: %v", err)
	}
	waitFor(count() + 100)
	srv.Stop()
	errDown := syncNow() // may succeed if everything was uploaded before the stop
	srv.Restart(t)
	if errDown == nil { // then what it covered is there already
		mu.Lock()
		covered := slices.Clone(all[:synced])
		mu.Unlock()
		verifyFresh(t, cfg, itemLocs(covered), itemData(covered))
	}
	waitFor(count() + 100)
	stop.Store(true)
	wg.Wait()
	if err := syncNow(); err != nil {
		t.Fatalf("Sync after the restart: %v", err)
	}
	t.Logf("%d chunks put, %d puts refused while the server was down, Sync while down: %v", len(all), failed.Load(), errDown)
	verifyFresh(t, cfg, itemLocs(all), itemData(all))
}

type item struct {
	loc  blob.Loc
	data []byte
}

func itemLocs(its []item) []blob.Loc {
	out := make([]blob.Loc, len(its))
	for i, it := range its {
		out[i] = it.loc
	}
	return out
}

func itemData(its []item) [][]byte {
	out := make([][]byte, len(its))
	for i, it := range its {
		out[i] = it.data
	}
	return out
}

// verifyFresh reads every chunk through a new store on the same prefix,
// with a new directory and no cache: from the object store alone.
func verifyFresh(t *testing.T, cfg Config, locs []blob.Loc, data [][]byte) {
	t.Helper()
	cfg.Dir, cfg.CacheBytes = t.TempDir(), -1
	s := mustOpen(t, cfg)
	defer s.Close()
	for i, loc := range locs {
		got, err := s.Read(loc, nil)
		if err != nil || !bytes.Equal(got, data[i]) {
			t.Fatalf("chunk %d at %+v after the restart: %v", i, loc, err)
		}
	}
	if s.SessionStart() <= maxSegment(locs) {
		t.Fatalf("a new store starts at pack %d, at or below pack %d in use", s.SessionStart(), maxSegment(locs))
	}
}

func maxSegment(locs []blob.Loc) uint32 {
	var m uint32
	for _, l := range locs {
		m = max(m, l.Segment)
	}
	return m
}
