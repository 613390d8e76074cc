// Command benchreport turns the measurements of bench/suite.sh into its
// reports: a Markdown report with the results table, the doppel-vs-
// passthrough ratios and the issue-4 targets each meets or misses, the
// method, machine and command; SVG charts beside it; and, optionally, the
// generated "Issue 4 suite" section of a summary document such as
// docs/BENCHMARKS.md (only the part between its markers is rewritten).
//
//	benchreport -run DIR -report docs/bench-suite.md [-summary docs/BENCHMARKS.md]
//
// The charts go to the directory named like the report without ".md"
// (docs/bench-suite/). DIR is the suite's run directory (see run.go).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	runDir := flag.String("run", "", "run directory written by bench/suite.sh (results.tsv, meta.txt, machine.md, load.txt)")
	report := flag.String("report", "", "Markdown report to write, e.g. docs/bench-suite.md; charts go to its name without .md")
	summary := flag.String("summary", "", "optional Markdown document whose \"Issue 4 suite\" section is rewritten")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: benchreport -run DIR -report FILE.md [-summary FILE.md]")
		fmt.Fprintln(os.Stderr, "Writes the report of a bench/suite.sh run, its SVG charts, and the summary section.")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *runDir == "" || *report == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := write(*runDir, *report, *summary); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func write(runDir, report, summary string) error {
	if !strings.HasSuffix(report, ".md") {
		return errors.New("-report must name a .md file")
	}
	r, err := loadRun(runDir)
	if err != nil {
		return err
	}
	results := evaluate(r)
	if len(results) == 0 {
		return fmt.Errorf("%s holds no measurements", runDir)
	}
	chartDir := strings.TrimSuffix(report, ".md")
	cs := charts(r, results)
	if err := os.MkdirAll(chartDir, 0o755); err != nil {
		return err
	}
	for _, c := range cs {
		if err := os.WriteFile(filepath.Join(chartDir, c.file), c.svg, 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(report, []byte(fullReport(r, results, cs, filepath.Base(chartDir))), 0o644); err != nil {
		return err
	}
	if summary == "" {
		return nil
	}
	return updateSummary(r, results, cs, summary, report, chartDir)
}

func updateSummary(r *run, results []result, cs []chart, summary, report, chartDir string) error {
	base := filepath.Dir(summary)
	reportLink, err := filepath.Rel(base, report)
	if err != nil {
		return err
	}
	chartLink, err := filepath.Rel(base, chartDir)
	if err != nil {
		return err
	}
	doc, err := os.ReadFile(summary)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	out, err := replaceSection(string(doc), summarySection(r, results, cs, filepath.ToSlash(chartLink), filepath.ToSlash(reportLink)))
	if err != nil {
		return err
	}
	return os.WriteFile(summary, []byte(out), 0o644)
}
