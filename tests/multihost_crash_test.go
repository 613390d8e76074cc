package tests

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/crashtest"
	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/testutil"
)

// TestMultiHostCrashLoop: two hosts mount one volume; host b runs the
// crash loop's workload (random writes, renames, truncates, fsyncs; see
// TestCrashLoop) and is killed with SIGKILL at random moments, then
// mounted again, while host a writes and fsyncs files of its own all
// along. After every kill, b holds what every operation that returned
// left (fsync'd files in particular) and its daemon's online check finds
// no damage; a's writes never fail and never wait longer than the lease
// time; at the end both hosts read all of a's files and, unmounted, fsck
// finds no damage (the killed host's uploads are reclaimable space until
// the sweep's grace has passed).
//
// DOPPEL_MULTIHOST_CRASH_CYCLES sets the number of kills (default 10).
func TestMultiHostCrashLoop(t *testing.T) {
	cycles := max(1, testutil.EnvInt(t, "DOPPEL_MULTIHOST_CRASH_CYCLES", 10))
	seed := crashtest.Seed(t, *crashSeed, "crash.seed")
	a, b := hostPair(t, "crash")
	if err := os.Mkdir(b.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	w := &crashWriter{root: b.path("d"), files: map[string][]byte{}, rand: rand.New(rand.NewPCG(seed, 8))}

	other := &steadyWriter{v: a, rand: rand.New(rand.NewPCG(seed, 9)), files: map[string][]byte{}}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		other.run(&stop)
	}()
	crashtest.Loop(t, cycles, rand.New(rand.NewPCG(seed, 7)), 100*time.Millisecond, 900*time.Millisecond, onlineTarget{b}, w)
	stop.Store(true)
	wg.Wait()
	if other.err != nil {
		t.Fatalf("host a's writes failed while b was killed: %v", other.err)
	}
	if other.slowest > pgstore.LeaseTime {
		t.Errorf("host a waited %v for one write while b was killed (lease time %v)", other.slowest, pgstore.LeaseTime)
	}
	for _, v := range []*volume{a, b} {
		for name, want := range other.files {
			if got, err := os.ReadFile(v.path(name)); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: host a's %s reads %d bytes (%v), want %d", v.Mnt, name, len(got), err, len(want))
			}
		}
	}
	t.Logf("%d kills of host b, %d operations there; host a wrote %d files meanwhile, slowest write + fsync %v",
		cycles, w.ops, len(other.files), other.slowest)
	a.umount(t)
	b.umount(t)
	// Packs a killed host uploaded without committing the metadata that
	// would name them are orphans, reclaimable space, until the sweep
	// takes them after the grace that protects other hosts' uploads in
	// flight (10 minutes): fsck may list them, nothing else.
	a.fsck(t)
}

// onlineTarget kills a host's daemon and checks the volume through the
// daemon once it is back (the other host keeps it mounted, so the volume
// cannot be checked offline here).
type onlineTarget struct{ v *volume }

func (o onlineTarget) Crash(t *testing.T)   { killDaemonNow(t, o.v) }
func (o onlineTarget) Restart(t *testing.T) { o.v.mount(t) }
func (o onlineTarget) Check(t *testing.T)   { o.v.fsckOnline(t) }

// steadyWriter writes and fsyncs small files on one host until stopped,
// remembering each one whose fsync returned and the slowest operation.
type steadyWriter struct {
	v       *volume
	rand    *rand.Rand
	files   map[string][]byte
	slowest time.Duration
	err     error
}

func (s *steadyWriter) run(stop *atomic.Bool) {
	for i := 0; !stop.Load(); i++ {
		name := fmt.Sprintf("a-%04d", i)
		data := make([]byte, 1+s.rand.IntN(200<<10))
		for j := range data {
			data[j] = byte(s.rand.Uint32())
		}
		start := time.Now()
		if err := writeSynced(s.v.path(name), data); err != nil {
			s.err = fmt.Errorf("%s: %w", name, err)
			return
		}
		s.slowest = max(s.slowest, time.Since(start))
		s.files[name] = data
	}
}
