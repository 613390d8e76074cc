package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// kind says what a workload's measurements are and how they compare.
type kind int

const (
	rateMiB  kind = iota // seconds to move amount MiB; shown as MiB/s, ratio of speeds
	rateOps              // seconds for amount operations; shown as ops/s, ratio of speeds
	duration             // seconds; shown as seconds, ratio of times (lower is better)
	growth               // bytes added; shown against the sequential size, in percent
	peakRSS              // KiB; the maximum over all rss_* workloads
)

// workload is one row of the results table.
type workload struct {
	key    string // workload name in results.tsv
	short  string // label in the charts
	kind   kind
	label  func(r *run) string
	amount func(r *run) float64 // MiB or operations, for the rate kinds
	// ref is the measurement doppel is compared with: "" for the
	// passthrough's of the same workload, else another workload of doppel.
	ref    string
	target goal
}

// goal is a target of issue 4. For rates, doppel's speed / the reference's
// must reach at least limit; for durations doppel's time / the passthrough's
// must stay at or below it; growth is in percent and RSS in MiB, both upper
// bounds.
type goal struct {
	limit float64 // 0: no target
	text  string
}

func workloads() []workload {
	seqMiB := func(r *run) float64 { return float64(r.metaInt("size_mib")) }
	randOps := func(r *run) float64 { return float64(r.metaInt("rand_io_mib") * 256) }
	files := func(r *run) float64 { return float64(r.metaInt("files")) }
	randLabel := func(qd int) func(r *run) string {
		return func(r *run) string {
			return fmt.Sprintf("Random 4 KiB writes into a %s file, iodepth %d (%s written, %s, buffered, fsync at end)",
				sizeLabel(r.metaInt("rand_file_mib")), qd, sizeLabel(r.metaInt("rand_io_mib")), r.meta["rand_engine"])
		}
	}
	filesLabel := func(op string) func(r *run) string {
		return func(r *run) string { return fmt.Sprintf("%s, %s files", op, thousands(r.metaInt("files"))) }
	}
	return []workload{
		{key: "seqwrite", short: "seq write", kind: rateMiB, amount: seqMiB, target: goal{0.75, "≥ 0.75×"},
			label: func(r *run) string {
				return fmt.Sprintf("Sequential write, %s unique data, 1 MiB I/O, fsync at end", sizeLabel(r.metaInt("size_mib")))
			}},
		{key: "seqread", short: "seq read cold", kind: rateMiB, amount: seqMiB, target: goal{0.85, "≥ 0.85×"},
			label: func(r *run) string { return "Sequential read of it, remounted, caches dropped" }},
		{key: "rewrite", short: "same data again (vs own 1st write)", kind: rateMiB, amount: seqMiB, ref: "seqwrite", target: goal{1.0, "≥ 1.0× doppel's first write"},
			label: func(r *run) string {
				return "The same data written again under another name, caches dropped first as for the first write (vs doppel's first write)"
			}},
		{key: "rewrite_after_read", short: "same again after the read (vs own 1st write)", kind: rateMiB, amount: seqMiB, ref: "seqwrite",
			label: func(r *run) string {
				return "… and right after reading the first copy, its pages still cached (vs doppel's first write)"
			}},
		{key: "rewrite_growth", short: "growth of the copy", kind: growth, target: goal{1.0, "< 1 %"},
			label: func(r *run) string { return "Physical growth of that second copy: chunk data (`doppel df`)" }},
		{key: "rewrite_meta_growth", short: "metadata growth of the copy", kind: growth,
			label: func(r *run) string { return "… and metadata on disk (Pebble; moves with compactions)" }},
		{key: "randwrite_qd1", short: "rand 4K iodepth 1", kind: rateOps, amount: randOps, target: goal{0.5, "≥ 0.5×"}, label: randLabel(1)},
		{key: "randwrite_qd16", short: "rand 4K iodepth 16", kind: rateOps, amount: randOps, target: goal{0.5, "≥ 0.5×"}, label: randLabel(16)},
		{key: "create", short: "create 1 KiB", kind: rateOps, amount: files, target: goal{0.8, "≥ 0.8×"},
			label: func(r *run) string {
				return fmt.Sprintf("Create + write %d B + close, %s files", r.metaInt("file_size"), thousands(r.metaInt("files")))
			}},
		{key: "stat", short: "stat", kind: rateOps, amount: files, target: goal{0.8, "≥ 0.8×"}, label: filesLabel("stat, caches dropped")},
		{key: "unlink", short: "unlink", kind: rateOps, amount: files, target: goal{0.8, "≥ 0.8×"}, label: filesLabel("unlink, caches dropped")},
		{key: "untar", short: "untar", kind: duration,
			label: func(r *run) string {
				return fmt.Sprintf("Untar the Go toolchain (%s %s: %s entries, %s tar)", r.meta["tree_root"],
					r.meta["tree_version"], thousands(r.metaInt("tree_entries")), humanBytes(float64(r.metaInt("tree_bytes"))))
			}},
		{key: "build", short: "go build", kind: duration,
			label: func(r *run) string {
				return "`go build " + r.meta["build_pkgs"] + "` with it, cold GOCACHE in the target"
			}},
		{key: "untar_build", short: "untar + build", kind: duration, target: goal{1.3, "≤ 1.3× time"},
			label: func(r *run) string { return "Untar + build" }},
		{key: "postmark", short: "postmark", kind: duration, target: goal{1.2, "≤ 1.2× time"},
			label: func(r *run) string {
				return fmt.Sprintf("postmark: %s files, %s transactions, %s–%s bytes", thousands(r.metaInt("pm_files")),
					thousands(r.metaInt("pm_tx")), thousands(r.metaInt("pm_min")), thousands(r.metaInt("pm_max")))
			}},
		{key: "rss", short: "peak RSS", kind: peakRSS, target: goal{300, "≤ 300 MiB"},
			label: func(r *run) string { return "doppel daemon peak RSS (VmHWM), all workloads" }},
	}
}

// result is a workload evaluated on one run.
type result struct {
	w      workload
	label  string
	values map[string]float64 // median per target, in the workload's unit
	// ratio compares doppel with its reference: speed ratio for rates,
	// time ratio for durations, percent for growth, MiB for RSS. NaN if
	// either side is missing.
	ratio float64
	// speedup is doppel's speed relative to the reference (> 1: faster),
	// for the charts; NaN where it does not apply.
	speedup float64
	met     *bool // nil when there is no target or no measurement
}

func evaluate(r *run) []result {
	var out []result
	for _, w := range workloads() {
		res := result{w: w, label: w.label(r), values: map[string]float64{}, ratio: math.NaN(), speedup: math.NaN()}
		for _, t := range r.targets() {
			if v := r.median(w.key, t); !math.IsNaN(v) {
				res.values[t] = v
			}
		}
		switch w.kind {
		case rateMiB, rateOps, duration:
			ref := r.median(w.key, "passthrough")
			if w.ref != "" {
				ref = r.median(w.ref, "doppel")
			}
			d := r.median(w.key, "doppel")
			res.speedup = ref / d
			res.ratio = res.speedup
			if w.kind == duration {
				res.ratio = d / ref
			}
		case growth:
			size := float64(r.metaInt("size_mib")) * (1 << 20)
			if v, ok := res.values["doppel"]; ok && size > 0 {
				res.ratio = v / size * 100
			}
		case peakRSS:
			if peak, ok := peakRSSKiB(r); ok {
				res.values["doppel"] = peak
				res.ratio = peak / 1024
			}
		}
		if len(res.values) == 0 {
			continue // workload not run
		}
		if w.target.limit > 0 && !math.IsNaN(res.ratio) {
			met := res.ratio <= w.target.limit
			switch w.kind {
			case rateMiB, rateOps:
				met = res.ratio >= w.target.limit
			case growth:
				met = res.ratio < w.target.limit
			}
			res.met = &met
		}
		out = append(out, res)
	}
	return out
}

// rssPeak is doppel's peak RSS during one workload, the maximum over its
// repetitions.
type rssPeak struct {
	workload string
	kib      float64
}

// rssPeaks lists the workloads with a doppel RSS measurement in the
// suite's order.
func rssPeaks(r *run) []rssPeak {
	var peaks []rssPeak
	for k, v := range r.samples {
		if name, ok := strings.CutPrefix(k.workload, "rss_"); ok && k.target == "doppel" && len(v) > 0 {
			p := rssPeak{name, v[0]}
			for _, x := range v {
				p.kib = math.Max(p.kib, x)
			}
			peaks = append(peaks, p)
		}
	}
	order := map[string]int{}
	for i, w := range strings.Fields(r.meta["workloads"]) {
		order[w] = i + 1
	}
	sort.Slice(peaks, func(i, j int) bool {
		a, b := peaks[i].workload, peaks[j].workload
		if order[a] != order[b] {
			return order[a] < order[b]
		}
		return a < b
	})
	return peaks
}

// peakRSSKiB is the highest VmHWM of any repetition of any workload.
func peakRSSKiB(r *run) (float64, bool) {
	peaks := rssPeaks(r)
	max := 0.0
	for _, p := range peaks {
		max = math.Max(max, p.kib)
	}
	return max, len(peaks) > 0
}
