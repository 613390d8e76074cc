package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

var targetTitles = map[string]string{
	"passthrough": "passthrough",
	"doppel":      "doppel",
	"native":      "native",
	"btrfs":       "btrfs (loop)",
	"xfs":         "XFS (loop)",
}

// sizeLabel writes MiB as "4 GiB" when whole gibibytes, else "256 MiB".
func sizeLabel(mib int) string {
	if mib >= 1024 && mib%1024 == 0 {
		return fmt.Sprintf("%d GiB", mib/1024)
	}
	return fmt.Sprintf("%d MiB", mib)
}

// thousands writes 100000 as "100,000".
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// cell formats a median of the workload in its unit.
func (res result) cell(r *run, target string) string {
	v, ok := res.values[target]
	if !ok {
		return "–"
	}
	switch res.w.kind {
	case rateMiB:
		return fmt.Sprintf("%.0f MiB/s", res.w.amount(r)/v)
	case rateOps:
		return thousands(int(math.Round(res.w.amount(r)/v))) + " ops/s"
	case duration:
		return fmt.Sprintf("%.2f s", v)
	case growth:
		return humanBytes(v)
	case peakRSS:
		return fmt.Sprintf("%.0f MiB", v/1024)
	}
	return "?"
}

func (res result) ratioText() string {
	if math.IsNaN(res.ratio) {
		return "n/a"
	}
	switch res.w.kind {
	case growth:
		return fmt.Sprintf("%.3f %%", res.ratio)
	case peakRSS:
		return "–" // the value itself is the figure
	}
	return fmt.Sprintf("%.2f×", res.ratio)
}

func (res result) verdict() string {
	switch {
	case res.met == nil:
		return ""
	case *res.met:
		return "yes"
	}
	return "**no**"
}

func humanBytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for math.Abs(b) >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", b)
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}

// resultsTable is the main table: doppel, the passthrough, the ratio and
// target, then the other references that were measured.
func resultsTable(r *run, results []result) string {
	others := []string{}
	for _, t := range r.targets() {
		if t != "doppel" && t != "passthrough" {
			others = append(others, t)
		}
	}
	var b strings.Builder
	b.WriteString("| workload | passthrough | doppel | doppel vs passthrough | target | met |")
	for _, t := range others {
		b.WriteString(" " + targetTitles[t] + " |")
	}
	b.WriteString("\n|---|---:|---:|---:|---|---|" + strings.Repeat("---:|", len(others)) + "\n")
	for _, res := range results {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |", res.label, res.cell(r, "passthrough"),
			res.cell(r, "doppel"), res.ratioText(), res.w.target.text, res.verdict())
		for _, t := range others {
			b.WriteString(" " + res.cell(r, t) + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

const tableNotes = `"doppel vs passthrough" is doppel's speed over the passthrough's for
throughputs (above 1× doppel is faster), doppel's time over the
passthrough's for the timed workloads (below 1× doppel is faster), and
against doppel's own first write for the second copy. Every figure is the
median of the repetitions; all measurements are listed in the full report.`

// rssTable lists doppel's peak RSS per workload.
func rssTable(r *run) string {
	peaks := rssPeaks(r)
	if len(peaks) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| workload | doppel daemon peak RSS (VmHWM), max of repetitions |\n|---|---:|\n")
	for _, p := range peaks {
		fmt.Fprintf(&b, "| %s | %.0f MiB |\n", p.workload, p.kib/1024)
	}
	return b.String()
}

// measurementsTable lists every measurement, per workload and target.
func measurementsTable(r *run) string {
	var b strings.Builder
	b.WriteString("| measurement | target | repetitions | median |\n|---|---|---|---:|\n")
	var keys []string
	for _, w := range workloads() {
		keys = append(keys, w.key)
	}
	for _, p := range rssPeaks(r) {
		keys = append(keys, "rss_"+p.workload)
	}
	for _, k := range keys {
		for _, t := range r.targets() {
			v := r.samples[sampleKey{k, t}]
			if len(v) == 0 {
				continue
			}
			runs := make([]string, len(v))
			for i, x := range v {
				runs[i] = strconv.FormatFloat(x, 'f', -1, 64)
			}
			fmt.Fprintf(&b, "| %s (%s) | %s | %s | %s |\n", k, unitOf(k), t, strings.Join(runs, " "),
				strconv.FormatFloat(median(v), 'f', -1, 64))
		}
	}
	return b.String()
}

func unitOf(key string) string {
	switch {
	case strings.HasSuffix(key, "_growth"):
		return "bytes"
	case strings.HasPrefix(key, "rss_"):
		return "KiB"
	}
	return "s"
}
