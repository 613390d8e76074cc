package content

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestCacheWriteBudget: bytes count against the budget for cacheWindow,
// then no longer.
func TestCacheWriteBudget(t *testing.T) {
	clock := time.Unix(1000, 0)
	b := newCacheWriteBudget(100, func() time.Time { return clock })
	step := func(d time.Duration, n int64, want bool) {
		t.Helper()
		clock = clock.Add(d)
		if got := b.take(n); got != want {
			t.Fatalf("at %v: take(%d) = %v, want %v", clock.Sub(time.Unix(1000, 0)), n, got, want)
		}
	}
	step(0, 60, true)
	step(0, 50, false) // 110 > 100; nothing counted
	step(10*time.Second, 40, true)
	step(0, 1, false)
	step(19*time.Second, 1, false) // 29 s after the first 60
	step(2*time.Second, 60, true)  // the first 60 expired
	step(0, 1, false)
	step(cacheWindow, 100, true) // everything expired
	step(0, 101, false)
}

// TestHostCacheBudgetIsSome: the budget read from the kernel's settings is
// positive.
func TestHostCacheBudgetIsSome(t *testing.T) {
	if b := hostCacheBudget(); b <= 0 {
		t.Fatalf("hostCacheBudget() = %d", b)
	}
}

// TestKeptFilesWritePastTheBudgetAroundTheCache: once a kept file's
// streams have spent the budget, their next chunks go around the page
// cache, while writes that are not streams still go through it; all read
// back as written.
func TestKeptFilesWritePastTheBudgetAroundTheCache(t *testing.T) {
	needSegmentFiles(t, "only segment files are written around the page cache")
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), VerifyReads: true})
	counter := &cachedPutCounter{Store: v.blobs}
	v.e.blobs = counter
	v.e.hostCache.budget = newCacheWriteBudget(3<<20, time.Now)
	release := v.e.KeepHostCache(3)
	defer release()
	rng := rand.New(rand.NewPCG(7, 7))
	var want []byte
	write := func(streamed bool) {
		off := int64(len(want))
		data := testutil.RandBytes(rng, 1<<20)
		ps, _ := Cut(v.e.chunk, off, data, true)
		v.e.MarkHostCached(3, ps, streamed)
		testutil.Check(t, v.e.CommitChunks(ps, nil, func(tx *Tx) error { _, err := tx.WriteChunks(3, ps); return err }))
		want = append(want, data...)
	}
	for range 6 {
		write(true)
	}
	if c, o := counter.cached.Load(), counter.other.Load(); c == 0 || o == 0 {
		t.Fatalf("6 MiB of streams against a 3 MiB budget: %d cached writes, %d others; want some of each", c, o)
	}
	cached, other := counter.cached.Load(), counter.other.Load()
	write(false)
	if counter.cached.Load() == cached || counter.other.Load() != other {
		t.Fatalf("a write that is no stream, past the budget: %d cached writes, %d others; want some, none",
			counter.cached.Load()-cached, counter.other.Load()-other)
	}
	v.checkContent(3, want)
}
