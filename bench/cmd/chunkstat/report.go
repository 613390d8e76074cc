package main

import (
	"fmt"
	"io"
	"strings"
)

// Report is chunkstat's result.
type Report struct {
	Files    int64          `json:"files"`
	Size     int64          `json:"size_bytes"` // holes included
	Data     int64          `json:"data_bytes"` // holes excluded
	Policies []PolicyReport `json:"policies"`   // the chunking policies, then whole-file
}

func (sc *scanner) report() Report {
	r := Report{Files: sc.files, Size: sc.size, Data: sc.data}
	for _, ps := range sc.policies {
		r.Policies = append(r.Policies, ps.report())
	}
	r.Policies = append(r.Policies, sc.wholeFile.report())
	return r
}

func (r Report) markdown(w io.Writer) {
	fmt.Fprintf(w, "%d files, %s (holes included), %s of data.\n\n", r.Files, mib(r.Size), mib(r.Data))
	fmt.Fprintln(w, "| policy | chunks | distinct | distinct bytes | 4 KiB-aligned | mean distinct chunk | data / distinct |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	for _, p := range r.Policies {
		ratio := 0.0
		if p.DistinctBytes > 0 {
			ratio = float64(p.Bytes) / float64(p.DistinctBytes)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %.1f KiB | %.2f |\n", p.Policy, p.Chunks,
			p.DistinctChunks, mib(p.DistinctBytes), mib(p.PaddedBytes), p.MeanChunk/1024, ratio)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Distinct chunks by size: count, bytes, and bytes when 4 KiB-aligned.")
	fmt.Fprintln(w)
	var head, rule strings.Builder
	head.WriteString("| policy |")
	rule.WriteString("|---|")
	lo := int64(0)
	for _, b := range r.Policies[0].Buckets {
		if b.Below == 0 {
			fmt.Fprintf(&head, " ≥ %s |", size(lo))
		} else {
			fmt.Fprintf(&head, " %s–%s |", size(lo), size(b.Below))
		}
		rule.WriteString("---:|")
		lo = b.Below
	}
	fmt.Fprintln(w, head.String())
	fmt.Fprintln(w, rule.String())
	for _, p := range r.Policies {
		fmt.Fprintf(w, "| %s |", p.Policy)
		for _, b := range p.Buckets {
			if b.Chunks == 0 {
				fmt.Fprint(w, " – |")
				continue
			}
			fmt.Fprintf(w, " %d: %s → %s |", b.Chunks, mib(b.Bytes), mib(b.Padded))
		}
		fmt.Fprintln(w)
	}
}

// mib formats a byte count in MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// size formats a power-of-two bucket bound.
func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprint(n)
}
