package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureResults is a small run: two repetitions where doppel is half as
// fast as the passthrough at writing, twice as slow at postmark, and the
// second copy grows by 1 MiB of a 1 GiB file.
const fixtureResults = `seqwrite	passthrough	1	2.0
seqwrite	doppel	1	4.0
seqwrite	native	1	1.0
seqwrite	passthrough	2	2.2
seqwrite	doppel	2	4.4
seqwrite	native	2	1.1
rewrite	doppel	1	2.0
rewrite	doppel	2	2.2
rewrite_growth	doppel	1	1048576
rewrite_growth	doppel	2	1048576
postmark	passthrough	1	10
postmark	doppel	1	20
postmark	passthrough	2	10
postmark	doppel	2	20
rss_seq	doppel	1	102400
rss_seq	doppel	2	204800
rss_postmark	doppel	1	51200
`

const fixtureMeta = `cmdline=BENCH_REPS=2 bench/suite.sh
reps=2
size_mib=1024
files=100000
targets=passthrough doppel native btrfs xfs
workloads=seq postmark
date_utc=2026-01-02 03:04 UTC
duration_s=3725
pm_files=20000
pm_tx=50000
pm_min=500
pm_max=10000
quick=0
caches_dropped=1
`

func writeFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"results.tsv": fixtureResults,
		"meta.txt":    fixtureMeta,
		"machine.md":  "| CPU | test |\n",
		"load.txt":    "1.0\n3.0\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadRun(t *testing.T) {
	r, err := loadRun(writeFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.median("seqwrite", "doppel"); math.Abs(got-4.2) > 1e-9 {
		t.Errorf("median of 4.0 and 4.4 = %v, want 4.2", got)
	}
	if got := r.median("seqwrite", "btrfs"); !math.IsNaN(got) {
		t.Errorf("median without measurements = %v, want NaN", got)
	}
	if got := strings.Join(r.targets(), " "); got != "passthrough doppel native" {
		t.Errorf("targets = %q: want the measured ones in the suite's order", got)
	}
	if r.meta["cmdline"] != "BENCH_REPS=2 bench/suite.sh" {
		t.Errorf("a meta value with '=' in it: %q", r.meta["cmdline"])
	}
	if got := r.loadSummary(); !strings.HasPrefix(got, "mean 2.0, max 3.0") {
		t.Errorf("load summary %q", got)
	}
}

func TestLoadRunRejectsBadLines(t *testing.T) {
	for name, bad := range map[string]string{
		"results.tsv": "seqwrite\tdoppel\t1\n",
		"meta.txt":    "no equals sign\n",
	} {
		dir := writeFixture(t)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := loadRun(dir); err == nil {
			t.Errorf("%s with %q: no error", name, bad)
		}
	}
	dir := writeFixture(t)
	if err := os.WriteFile(filepath.Join(dir, "results.tsv"), []byte("seqwrite\tdoppel\t1\tNaN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadRun(dir); err == nil {
		t.Error("a NaN measurement was accepted")
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
