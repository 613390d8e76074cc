package testutil

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// Rand returns a random source for a randomized test, seeded from
// DOPPEL_TEST_SEED or else the clock, and logs the seed so that a
// failure can be replayed (DOPPEL_TEST_SEED=N go test -run ...).
func Rand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DOPPEL_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("DOPPEL_TEST_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with DOPPEL_TEST_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, 1))
}
