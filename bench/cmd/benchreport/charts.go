package main

import (
	"fmt"
	"math"
)

// chart is one rendered chart and what the reports say about it.
type chart struct {
	file, alt string
	svg       []byte
}

var targetColors = map[string]string{
	"passthrough": "#7f7f7f",
	"doppel":      "#1f77b4",
	"native":      "#2ca02c",
	"btrfs":       "#ff7f0e",
	"xfs":         "#9467bd",
}

const (
	colorMet    = "#2ca02c"
	colorMissed = "#d62728"
	colorNoGoal = "#1f77b4"
)

func charts(r *run, results []result) []chart {
	var out []chart
	if c, ok := ratioChart(results); ok {
		out = append(out, chart{"ratios.svg", "doppel's speed relative to the passthrough, with the targets", c.svg()})
	}
	if c, ok := systemsChart(r, results); ok {
		out = append(out, chart{"systems.svg", "every system's speed relative to the passthrough", c.svg()})
	}
	if c, ok := rssChart(r); ok {
		out = append(out, chart{"rss.svg", "doppel daemon peak RSS per workload", c.svg()})
	}
	return out
}

// ratioChart: doppel's speed over its reference's for every compared
// workload (durations inverted, so that right is always better), green
// where the target is met, red where not, the target as a tick.
func ratioChart(results []result) (barChart, bool) {
	c := barChart{
		title:  "doppel vs the go-fuse passthrough: relative speed (tick = target)",
		axis:   "doppel speed / passthrough speed (timed workloads: passthrough time / doppel time)",
		series: []series{{"doppel", colorNoGoal}},
		ref:    1,
		format: func(v float64) string { return fmt.Sprintf("%.2f×", v) },
	}
	for _, res := range results {
		if math.IsNaN(res.speedup) {
			continue
		}
		marker, color := math.NaN(), colorNoGoal
		if res.w.target.limit > 0 {
			marker = res.w.target.limit
			if res.w.kind == duration {
				marker = 1 / marker
			}
		}
		if res.met != nil {
			color = colorMissed
			if *res.met {
				color = colorMet
			}
		}
		c.rows = append(c.rows, res.w.short)
		c.values = append(c.values, []float64{res.speedup})
		c.colors = append(c.colors, []string{color})
		c.markers = append(c.markers, marker)
	}
	return c, len(c.rows) > 0
}

// systemsChart: every target's speed relative to the passthrough, per
// workload the passthrough ran, on a log scale.
func systemsChart(r *run, results []result) (barChart, bool) {
	c := barChart{
		title:  "Relative to the go-fuse passthrough (dashed line; log scale, right = faster)",
		axis:   "speed relative to the passthrough (time of the passthrough / time of the system)",
		ref:    1,
		log2:   true,
		format: func(v float64) string { return fmt.Sprintf("%.2f×", v) },
	}
	var targets []string // the passthrough is the reference line
	for _, t := range r.targets() {
		if t != "passthrough" {
			targets = append(targets, t)
		}
	}
	for _, t := range targets {
		c.series = append(c.series, series{targetTitles[t], targetColors[t]})
	}
	for _, res := range results {
		pt, ok := res.values["passthrough"]
		if !ok || res.w.kind == growth || res.w.kind == peakRSS {
			continue
		}
		row := make([]float64, len(targets))
		for j, t := range targets {
			row[j] = math.NaN()
			if v, ok := res.values[t]; ok {
				row[j] = pt / v // all values are seconds: speed ratio
			}
		}
		c.rows = append(c.rows, res.w.short)
		c.values = append(c.values, row)
	}
	return c, len(c.rows) > 0
}

func rssChart(r *run) (barChart, bool) {
	c := barChart{
		title:  "doppel daemon peak RSS (VmHWM) per workload; dashed line = 300 MiB target",
		axis:   "MiB",
		series: []series{{"doppel", targetColors["doppel"]}},
		ref:    300,
		format: func(v float64) string { return fmt.Sprintf("%.0f MiB", v) },
	}
	for _, p := range rssPeaks(r) {
		c.rows = append(c.rows, p.workload)
		c.values = append(c.values, []float64{p.kib / 1024})
	}
	return c, len(c.rows) > 0
}
