package main

import (
	"math"
	"testing"
)

func evaluateFixture(t *testing.T) map[string]result {
	t.Helper()
	r, err := loadRun(writeFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]result{}
	for _, res := range evaluate(r) {
		out[res.w.key] = res
	}
	return out
}

func TestEvaluateRatiosAndTargets(t *testing.T) {
	res := evaluateFixture(t)
	for _, c := range []struct {
		key   string
		ratio float64
		met   bool
	}{
		{"seqwrite", 0.5, false},               // half the passthrough's speed, target 0.75
		{"rewrite", 4.2 / 2.1, true},           // against doppel's own first write
		{"rewrite_growth", 100.0 / 1024, true}, // 1 MiB of 1 GiB, in percent
		{"postmark", 2, false},                 // twice the passthrough's time, target 1.2
		{"rss", 200, true},                     // the highest VmHWM of all, MiB
	} {
		got, ok := res[c.key]
		if !ok {
			t.Errorf("%s: missing from the results", c.key)
			continue
		}
		if math.Abs(got.ratio-c.ratio) > 1e-9 {
			t.Errorf("%s: ratio %v, want %v", c.key, got.ratio, c.ratio)
		}
		if got.met == nil || *got.met != c.met {
			t.Errorf("%s: met = %v, want %v", c.key, got.met, c.met)
		}
	}
	if got := res["postmark"].speedup; math.Abs(got-0.5) > 1e-9 {
		t.Errorf("postmark speedup %v, want 0.5 (durations are inverted for the charts)", got)
	}
	if _, ok := res["create"]; ok {
		t.Error("a workload without measurements is in the results")
	}
}

func TestEvaluateWithoutPassthrough(t *testing.T) {
	r, err := loadRun(writeFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	for k := range r.samples {
		if k.target == "passthrough" {
			delete(r.samples, k)
		}
	}
	for _, res := range evaluate(r) {
		if res.w.key == "seqwrite" && (res.met != nil || !math.IsNaN(res.ratio)) {
			t.Errorf("seqwrite without a passthrough: ratio %v, met %v; want n/a", res.ratio, res.met)
		}
	}
}

func TestRSSPeaksInSuiteOrder(t *testing.T) {
	r, err := loadRun(writeFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	peaks := rssPeaks(r)
	if len(peaks) != 2 || peaks[0].workload != "seq" || peaks[1].workload != "postmark" {
		t.Fatalf("peaks %+v: want seq then postmark", peaks)
	}
	if peaks[0].kib != 204800 {
		t.Errorf("seq peak %v KiB, want the larger repetition, 204800", peaks[0].kib)
	}
}
