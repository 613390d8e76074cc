package crashtest

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// Workload is what runs when the crash comes.
type Workload interface {
	// Run applies operations until one fails, stop is set, or the
	// workload is done. An error once stop is set is the crash cutting
	// an operation off, and expected.
	Run(stop *atomic.Bool) error
	// Verify checks, once the target is back, that it holds what every
	// operation that returned left and what the interrupted one may have
	// left; it reports problems on t and returns false if there were any.
	Verify(t *testing.T) bool
}

// Target is what crashes.
type Target interface {
	// Crash stops it at once, as SIGKILL or a power cut would.
	Crash(t *testing.T)
	// Restart brings it back; its crash recovery runs.
	Restart(t *testing.T)
	// Check runs the consistency check (fsck) and leaves it running.
	Check(t *testing.T)
}

// Cycle runs w against target until after has passed or w is done,
// crashes target, restarts it, verifies what w wrote and checks the
// target. It fails t on any problem.
func Cycle(t *testing.T, target Target, w Workload, after time.Duration) {
	t.Helper()
	var stop atomic.Bool
	done := make(chan error, 1)
	go func() { done <- w.Run(&stop) }()
	var err error
	finished := false
	select {
	case <-time.After(after):
	case err = <-done:
		finished = true
	}
	if finished && err != nil {
		t.Fatalf("the workload failed before the crash: %v", err)
	}
	stop.Store(true)
	target.Crash(t)
	if !finished {
		<-done // cut off by the crash: its error is expected
	}
	target.Restart(t)
	if !w.Verify(t) {
		t.Fatal("the target does not hold what was written (see above)")
	}
	target.Check(t)
}

// Loop runs cycles Cycles, each crashing after a delay drawn from r in
// [min, max).
func Loop(t *testing.T, cycles int, r *rand.Rand, min, max time.Duration, target Target, w Workload) {
	t.Helper()
	for range cycles {
		Cycle(t, target, w, min+time.Duration(r.Int64N(int64(max-min))))
	}
}

// Seed returns flagValue, or a seed from the clock when it is 0, and logs
// how to replay the run with the flag named flagName.
func Seed(t *testing.T, flagValue uint64, flagName string) uint64 {
	t.Helper()
	seed := flagValue
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: -%s=%d)", seed, flagName, seed)
	return seed
}
