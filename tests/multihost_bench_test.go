package tests

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestMultiHostFigures measures what docs/BENCHMARKS.md reports for
// several hosts (issue 16), on one machine: 4 daemons of one doppel
// volume on one PostgreSQL and one S3 server, each its own host; then,
// with DOPPEL_BENCH_JUICEFS=1, 4 mounts of one JuiceFS volume on the same
// two servers. It runs only with DOPPEL_MULTIHOST_BENCH=1 (minutes, and
// figures rather than checks):
//
//   - visibility: a file created on one host, polled for on another
//     every millisecond; and a chmod of a file the other host has cached
//     (its attributes in the kernel), polled for the same way: median and
//     99th percentile of DOPPEL_BENCH_SAMPLES (default 200) changes each;
//
//   - aggregate throughput with 1, 2 and 4 hosts at once: sequential
//     write + fsync of unique data (DOPPEL_BENCH_SEQ_MIB per host, default
//     256), small-file creates (1 KiB, DOPPEL_BENCH_FILES per host, default
//     1000) in a directory per host and in one shared directory;
//
//   - space: 4 hosts writing the same data (DOPPEL_BENCH_SAME_MIB, default
//     4096: the 4 GiB) at once.
//
// DOPPEL_BENCH_DEDUP=background mounts every doppel host with --dedup
// background.
//
//	DOPPEL_MULTIHOST_BENCH=1 [DOPPEL_BENCH_JUICEFS=1] go test -run TestMultiHostFigures -v -timeout 60m ./tests
func TestMultiHostFigures(t *testing.T) {
	if os.Getenv("DOPPEL_MULTIHOST_BENCH") != "1" {
		t.Skip("a benchmark: DOPPEL_MULTIHOST_BENCH=1 runs it")
	}
	cfg := figureConfig{
		seqMiB:  testutil.EnvInt(t, "DOPPEL_BENCH_SEQ_MIB", 256),
		files:   testutil.EnvInt(t, "DOPPEL_BENCH_FILES", 1000),
		samples: testutil.EnvInt(t, "DOPPEL_BENCH_SAMPLES", 200),
		sameMiB: testutil.EnvInt(t, "DOPPEL_BENCH_SAME_MIB", 4096),
	}
	a, s3srv, pg := s3Volume(t, "figures")
	if mode := os.Getenv("DOPPEL_BENCH_DEDUP"); mode != "" {
		a.flags = []string{"--dedup", mode} // every host, from the remount on
	}
	doppelHosts := append([]*volume{a}, joinHosts(t, a, "b", "c", "d")...)
	hosts := make([]figureHost, len(doppelHosts))
	for i, h := range doppelHosts {
		hosts[i] = h
	}
	cfg.run(t, "doppel", hosts, func() int64 { return a.df(t).PhysicalBytes })
	for _, h := range doppelHosts {
		h.umount(t)
	}
	if os.Getenv("DOPPEL_BENCH_JUICEFS") == "1" {
		jfs := juicefsHosts(t, pg, s3srv, 4)
		cfg.run(t, "juicefs", jfs, func() int64 { return bucketBytes(t, s3srv, "jfs-figures/") })
	}
}

// figureHost is one host's mount of the volume under test.
type figureHost interface {
	path(elem ...string) string
}

// metric reads a counter of the daemon's metrics (0 if it is missing).
func (v *volume) metric(t *testing.T, name string) float64 {
	out, err := runDoppel(time.Minute, "metrics", "--store", v.Store)
	if err != nil {
		t.Fatalf("doppel metrics: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == name {
			x, _ := strconv.ParseFloat(f[1], 64)
			return x
		}
	}
	return 0
}

// lockWait sums the time doppel hosts spent taking the volume's
// transaction lock (0 for other systems).
func lockWait(t *testing.T, hosts []figureHost) float64 {
	var sum float64
	for _, h := range hosts {
		if v, ok := h.(*volume); ok {
			sum += v.metric(t, "doppel_tx_lock_wait_seconds_total")
		}
	}
	return sum
}

type figureConfig struct{ seqMiB, files, samples, sameMiB int }

func (c figureConfig) run(t *testing.T, sys string, hosts []figureHost, space func() int64) {
	a, b := hosts[0], hosts[1]
	figure := func(format string, args ...any) { t.Logf("FIGURE %s: "+format, append([]any{sys}, args...)...) }

	// Visibility of a change on another host: a new name, and a changed
	// mode of a file whose attributes the other host has cached.
	poll := func(what string, seen func() bool) time.Duration {
		start := time.Now()
		for !seen() {
			if time.Since(start) > 5*time.Second {
				t.Fatalf("%s: %s not seen on the other host after 5 s", sys, what)
			}
			time.Sleep(time.Millisecond)
		}
		return time.Since(start)
	}
	var created, chmodded []time.Duration
	if err := os.WriteFile(a.path("vis-mode"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	poll("vis-mode", func() bool { _, err := os.Stat(b.path("vis-mode")); return err == nil })
	for i := range c.samples {
		name := fmt.Sprintf("vis-%d", i)
		if err := os.WriteFile(a.path(name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		created = append(created, poll(name, func() bool { _, err := os.Stat(b.path(name)); return err == nil }))

		mode := os.FileMode(0o600 + i%2*0o40) // alternates
		if _, err := os.Stat(b.path("vis-mode")); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(a.path("vis-mode"), mode); err != nil {
			t.Fatal(err)
		}
		chmodded = append(chmodded, poll("a chmod", func() bool {
			st, err := os.Stat(b.path("vis-mode"))
			return err == nil && st.Mode().Perm() == mode
		}))
	}
	for _, s := range []struct {
		what string
		lat  []time.Duration
	}{{"a new file", created}, {"a chmod of a cached file", chmodded}} {
		slices.Sort(s.lat)
		figure("visibility of %s on another host: %d changes, median %v, p99 %v, max %v", s.what, len(s.lat),
			s.lat[len(s.lat)/2].Round(10*time.Microsecond), s.lat[len(s.lat)*99/100].Round(10*time.Microsecond), s.lat[len(s.lat)-1].Round(10*time.Microsecond))
	}

	r := rand.New(rand.NewPCG(7, 7))
	unique := func(n int) []byte {
		d := make([]byte, n)
		for i := range d {
			d[i] = byte(r.Uint32())
		}
		return d
	}
	// waited says what share of the hosts' time went to waiting for the
	// volume's transaction lock (doppel) since waitedBefore was read.
	waitedBefore := lockWait(t, hosts)
	waited := func(n int, d time.Duration) string {
		now := lockWait(t, hosts)
		w := now - waitedBefore
		waitedBefore = now
		if now == 0 {
			return ""
		}
		return fmt.Sprintf(" (transaction lock: %.1f s waited, %.0f%% of the hosts' time)", w, 100*w/(float64(n)*d.Seconds()))
	}
	for _, n := range []int{1, 2, 4} {
		data := make([][]byte, n)
		for i := range data {
			data[i] = unique(c.seqMiB << 20)
		}
		waitedBefore = lockWait(t, hosts) // not the data generation's
		d := parallel(t, hosts[:n], func(i int, h figureHost) error {
			return writeSynced(h.path(fmt.Sprintf("seq-%d-%d", n, i)), data[i])
		})
		figure("sequential write, %d hosts x %d MiB: %v, aggregate %.0f MiB/s%s", n, c.seqMiB, d.Round(time.Millisecond), float64(n*c.seqMiB)/d.Seconds(), waited(n, d))
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
			time.Sleep(1500 * time.Millisecond) // every host sees the directories (JuiceFS: its 1 s caches)
			waitedBefore = lockWait(t, hosts)   // not the pause's
			small := bytes.Repeat([]byte("x"), 1024)
			d := parallel(t, hosts[:n], func(i int, h figureHost) error {
				for j := range c.files {
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
			figure("creates, %d hosts x %d files of 1 KiB in %s: %v, aggregate %.0f files/s%s", n, c.files, where, d.Round(time.Millisecond), float64(n*c.files)/d.Seconds(), waited(n, d))
		}
	}

	// Space: four hosts write the same data at once.
	same := unique(c.sameMiB << 20)
	before := space()
	parallel(t, hosts, func(i int, h figureHost) error {
		return writeSynced(h.path(fmt.Sprintf("same-%d", i)), same)
	})
	time.Sleep(2 * time.Second) // uploads in flight land
	grew := space() - before
	figure("space: 4 hosts wrote the same %d MiB at once: the volume grew by %.1f MiB (%.2fx the data)",
		c.sameMiB, float64(grew)/(1<<20), float64(grew)/float64(len(same)))
}

// parallel runs f on every host at once and returns how long all took.
func parallel[H any](t *testing.T, hosts []H, f func(int, H) error) time.Duration {
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
