package tests

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestMultiHostFigures measures what docs/BENCHMARKS.md reports for
// several hosts (issue 16), on one machine: N daemons of one volume on the
// same PostgreSQL and S3 server, each its own host. It runs only with
// DOPPEL_MULTIHOST_BENCH=1 (minutes, and figures rather than checks):
//
//   - visibility: a file created on one host, polled for on another every
//     millisecond; median and 99th percentile of DOPPEL_BENCH_SAMPLES
//     (default 200) creations;
//
//   - aggregate throughput with 1, 2 and 4 hosts at once: sequential
//     write + fsync of unique data (DOPPEL_BENCH_SEQ_MIB per host, default
//     256), small-file creates (1 KiB, DOPPEL_BENCH_FILES per host, default
//     1000) in a directory per host and in one shared directory;
//
//   - space: 4 hosts writing the same data (DOPPEL_BENCH_SEQ_MIB) at once.
//
//     DOPPEL_MULTIHOST_BENCH=1 go test -run TestMultiHostFigures -v -timeout 60m ./tests
func TestMultiHostFigures(t *testing.T) {
	if os.Getenv("DOPPEL_MULTIHOST_BENCH") != "1" {
		t.Skip("a benchmark: DOPPEL_MULTIHOST_BENCH=1 runs it")
	}
	seqMiB := testutil.EnvInt(t, "DOPPEL_BENCH_SEQ_MIB", 256)
	files := testutil.EnvInt(t, "DOPPEL_BENCH_FILES", 1000)
	samples := testutil.EnvInt(t, "DOPPEL_BENCH_SAMPLES", 200)
	a, b := hostPair(t, "figures")
	hosts := []*volume{a, b, joinHost(t, a, "c"), joinHost(t, a, "d")}

	// Visibility of a change on another host.
	var lat []time.Duration
	for i := range samples {
		name := fmt.Sprintf("vis-%d", i)
		if err := os.WriteFile(a.path(name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for {
			if _, err := os.Stat(b.path(name)); err == nil {
				break
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("%s not seen on b after 5 s", name)
			}
			time.Sleep(time.Millisecond)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	t.Logf("FIGURE visibility: %d changes, median %v, p99 %v, max %v", samples, lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])

	r := rand.New(rand.NewPCG(7, 7))
	unique := func(n int) []byte {
		d := make([]byte, n)
		for i := range d {
			d[i] = byte(r.Uint32())
		}
		return d
	}
	for _, n := range []int{1, 2, 4} {
		data := make([][]byte, n)
		for i := range data {
			data[i] = unique(seqMiB << 20)
		}
		d := parallel(t, hosts[:n], func(i int, h *volume) error {
			return writeSynced(h.path(fmt.Sprintf("seq-%d-%d", n, i)), data[i])
		})
		t.Logf("FIGURE sequential write, %d hosts x %d MiB: %v, aggregate %.0f MiB/s", n, seqMiB, d.Round(time.Millisecond), float64(n*seqMiB)/d.Seconds())
		for _, shared := range []bool{false, true} {
			dir := func(i int) string {
				if shared {
					return fmt.Sprintf("shared-%d", n)
				}
				return fmt.Sprintf("own-%d-%d", n, i)
			}
			for i, h := range hosts[:n] {
				if err := os.MkdirAll(h.path(dir(i)), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(200 * time.Millisecond) // every host sees the directories
			small := bytes.Repeat([]byte("x"), 1024)
			d := parallel(t, hosts[:n], func(i int, h *volume) error {
				for j := range files {
					if err := os.WriteFile(h.path(dir(i), fmt.Sprintf("h%d-%05d", i, j)), small, 0o644); err != nil {
						return err
					}
				}
				return nil
			})
			where := "a directory per host"
			if shared {
				where = "one shared directory"
			}
			t.Logf("FIGURE creates, %d hosts x %d files of 1 KiB in %s: %v, aggregate %.0f files/s", n, files, where, d.Round(time.Millisecond), float64(n*files)/d.Seconds())
		}
	}

	// Space: four hosts write the same data at once.
	same := unique(seqMiB << 20)
	before := a.df(t).PhysicalBytes
	parallel(t, hosts, func(i int, h *volume) error {
		return writeSynced(h.path(fmt.Sprintf("same-%d", i)), same)
	})
	grew := a.df(t).PhysicalBytes - before
	t.Logf("FIGURE space: 4 hosts wrote the same %d MiB at once: the volume grew by %.1f MiB (%.2fx the data)",
		seqMiB, float64(grew)/(1<<20), float64(grew)/float64(len(same)))
}

// parallel runs f on every host at once and returns how long all took.
func parallel(t *testing.T, hosts []*volume, f func(int, *volume) error) time.Duration {
	t.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(hosts))
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- f(i, h)
		}()
	}
	wg.Wait()
	d := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return d
}
