package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplaceSection(t *testing.T) {
	body := sectionBegin + "\nnew\n" + sectionEnd

	got, err := replaceSection("# Benchmarks\n\nold text\n", body)
	if err != nil {
		t.Fatal(err)
	}
	want := "# Benchmarks\n\nold text\n\n" + sectionHeading + "\n\n" + body + "\n"
	if got != want {
		t.Errorf("appending:\n%s\nwant:\n%s", got, want)
	}

	doc := "before\n" + sectionBegin + "\nstale\n" + sectionEnd + "\nanalysis after\n"
	got, err = replaceSection(doc, body)
	if err != nil {
		t.Fatal(err)
	}
	if want := "before\n" + body + "\nanalysis after\n"; got != want {
		t.Errorf("replacing:\n%s\nwant:\n%s", got, want)
	}

	if _, err := replaceSection(sectionEnd+"\n"+sectionBegin, body); err == nil {
		t.Error("markers out of order: no error")
	}
	if _, err := replaceSection("x\n"+sectionBegin+"\n", body); err == nil {
		t.Error("begin marker without end: no error")
	}
}

func TestWriteReportChartsAndSummary(t *testing.T) {
	run := writeFixture(t)
	docs := t.TempDir()
	report := filepath.Join(docs, "bench-suite.md")
	summary := filepath.Join(docs, "BENCHMARKS.md")
	if err := os.WriteFile(summary, []byte("# Benchmarks\n\nkept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the second run replaces the section it added
		if err := write(run, report, summary); err != nil {
			t.Fatal(err)
		}
	}

	rep, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| Sequential write, 1 GiB unique data, 1 MiB I/O, fsync at end | 488 MiB/s | 244 MiB/s | 0.50× | ≥ 0.75× | **no** | 975 MiB/s |",
		"| postmark: 20,000 files, 50,000 transactions, 500–10,000 bytes | 10.00 s | 20.00 s | 2.00× | ≤ 1.2× time | **no** |",
		"![doppel's speed relative to the passthrough, with the targets](bench-suite/ratios.svg)",
		"BENCH_REPS=2 bench/suite.sh",
		"| CPU | test |",
		"1h02m",
	} {
		if !strings.Contains(string(rep), want) {
			t.Errorf("report lacks %q", want)
		}
	}

	sum, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	s := string(sum)
	if !strings.HasPrefix(s, "# Benchmarks\n\nkept\n") || strings.Count(s, sectionHeading) != 1 ||
		strings.Count(s, sectionBegin) != 1 || !strings.Contains(s, "[bench-suite.md](bench-suite.md)") {
		t.Errorf("summary after two runs:\n%s", s)
	}

	for _, name := range []string{"ratios.svg", "systems.svg", "rss.svg"} {
		b, err := os.ReadFile(filepath.Join(docs, "bench-suite", name))
		if err != nil {
			t.Fatal(err)
		}
		checkXML(t, name, b)
	}
}

func checkXML(t *testing.T, name string, b []byte) {
	t.Helper()
	if bytes.Contains(b, []byte("NaN")) || bytes.Contains(b, []byte("Inf")) {
		t.Errorf("%s has a NaN or Inf coordinate", name)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", name, err)
		}
	}
}

func TestInitSettings(t *testing.T) {
	for said, want := range map[string]string{
		"created volume in /v (x) (chunking cdc, compression off)": "chunking cdc, compression off",
		"something else": "something else",
	} {
		if got := initSettings(said); got != want {
			t.Errorf("initSettings(%q) = %q, want %q", said, got, want)
		}
	}
}

func TestChartDomain(t *testing.T) {
	nan := math.NaN()
	lin := barChart{values: [][]float64{{0.3, nan}, {1.7, 0.9}}, markers: []float64{0.75, nan}, ref: 1}
	if lo, hi := lin.domain(); lo != 0 || hi < 1.7 || hi > 2.5 {
		t.Errorf("linear domain [%v, %v]: want 0 to a little above 1.7", lo, hi)
	}
	log := barChart{values: [][]float64{{0.3}, {5}}, ref: math.NaN(), log2: true}
	if lo, hi := log.domain(); lo != 0.25 || hi != 8 {
		t.Errorf("log2 domain [%v, %v], want [0.25, 8]", lo, hi)
	}
	if got := log.ticks(0.25, 8); len(got) != 6 || got[0] != 0.25 || got[5] != 8 {
		t.Errorf("log2 ticks %v, want the powers of two from 1/4 to 8", got)
	}
	if got := tickLabel(0.25, true); got != "1/4" {
		t.Errorf("log tick label %q, want 1/4", got)
	}
	if got := tickLabel(0.25, false); got != "0.25" {
		t.Errorf("linear tick label %q, want 0.25", got)
	}
}
