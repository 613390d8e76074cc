package metrics

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// scrape serves reg through Handler and parses the reply as the
// Prometheus text format.
func scrape(t *testing.T, ops *Ops, figures func() (Figures, error), log *slog.Logger) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler(NewRegistry(ops, figures), log).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape: status %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("scrape served as %q, want the text format", ct)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("scrape does not parse as the Prometheus text format: %v", err)
	}
	return fams
}

// withOp returns the family's metric labelled op.
func withOp(t *testing.T, f *dto.MetricFamily, op Op) *dto.Metric {
	t.Helper()
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "op" && l.GetValue() == op.String() {
				return m
			}
		}
	}
	t.Fatalf("%s has no op=%q", f.GetName(), op)
	return nil
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestScrapeHasOpHistograms(t *testing.T) {
	var ops Ops
	ops.Observe(OpWrite, 3*time.Microsecond, 0)
	ops.Observe(OpWrite, 40*time.Microsecond, 0)
	ops.Observe(OpWrite, 2*time.Second, syscall.ENOSPC)
	ops.Observe(OpRead, time.Millisecond, syscall.EIO)
	fams := scrape(t, &ops, func() (Figures, error) { return Figures{}, nil }, quiet())

	hist := fams[opDurationName]
	if hist == nil || hist.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("no histogram %s", opDurationName)
	}
	if n := len(hist.GetMetric()); n != int(numOps) {
		t.Errorf("%s has %d series, want one per op (%d)", opDurationName, n, numOps)
	}
	h := withOp(t, hist, OpWrite).GetHistogram()
	if h.GetSampleCount() != 3 {
		t.Errorf("write count %d, want 3", h.GetSampleCount())
	}
	if want := (2*time.Second + 43*time.Microsecond).Seconds(); math.Abs(h.GetSampleSum()-want) > 1e-9 {
		t.Errorf("write sum %v s, want %v s", h.GetSampleSum(), want)
	}
	want := map[float64]uint64{5e-6: 1, 25e-6: 1, 50e-6: 2, 1: 2, 5: 3, math.Inf(1): 3}
	for _, b := range h.GetBucket() {
		if n, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != n {
			t.Errorf("write bucket le=%v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), n)
		}
	}
	if got := withOp(t, fams[opErrorsName], OpWrite).GetCounter().GetValue(); got != 1 {
		t.Errorf("write errors %v, want 1", got)
	}
	if got := withOp(t, fams[opEIOName], OpWrite).GetCounter().GetValue(); got != 0 {
		t.Errorf("write EIO %v, want 0 (ENOSPC is not EIO)", got)
	}
	if got := withOp(t, fams[opEIOName], OpRead).GetCounter().GetValue(); got != 1 {
		t.Errorf("read EIO %v, want 1", got)
	}
	if got := withOp(t, hist, OpLookup).GetHistogram().GetSampleCount(); got != 0 {
		t.Errorf("lookup count %d, want 0", got)
	}
	for _, name := range []string{"go_goroutines", "process_open_fds"} {
		if fams[name] == nil {
			t.Errorf("scrape lacks %s", name)
		}
	}
}

// Every Figures field reaches the scrape under its own metric.
func TestScrapeHasFigures(t *testing.T) {
	var f Figures
	fill(reflect.ValueOf(&f).Elem(), new(int64))
	fams := scrape(t, new(Ops), func() (Figures, error) { return f, nil }, quiet())
	seen := map[float64]string{}
	for _, m := range figureMetrics {
		name := m.name
		fam := fams[name]
		if fam == nil {
			t.Errorf("scrape lacks %s", name)
			continue
		}
		if strings.HasSuffix(name, "_total") != (fam.GetType() == dto.MetricType_COUNTER) {
			t.Errorf("%s is a %v: counters, and only they, end in _total", name, fam.GetType())
		}
		v := fam.GetMetric()[0].GetCounter().GetValue() + fam.GetMetric()[0].GetGauge().GetValue()
		if other, dup := seen[v]; dup {
			t.Errorf("%s and %s show the same field (value %v)", name, other, v)
		}
		seen[v] = name
		if v != m.of(&f) {
			t.Errorf("%s = %v, want %v", name, v, m.of(&f))
		}
	}
	if fields := countFields(reflect.TypeOf(f)); len(seen) != fields {
		t.Errorf("%d metrics show the %d fields of Figures", len(seen), fields)
	}
}

// fill gives every int64 field of v a distinct value.
func fill(v reflect.Value, next *int64) {
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Struct {
			fill(f, next)
		} else {
			*next += 1000
			f.SetInt(*next)
		}
	}
}

func countFields(t reflect.Type) int {
	n := 0
	for i := range t.NumField() {
		if f := t.Field(i); f.Type.Kind() == reflect.Struct {
			n += countFields(f.Type)
		} else {
			n++
		}
	}
	return n
}

// A failing space report leaves its metrics out, logs why, and keeps the
// rest of the scrape.
func TestScrapeSurvivesFigureErrors(t *testing.T) {
	var ops Ops
	ops.Observe(OpGetattr, time.Microsecond, 0)
	var log bytes.Buffer
	fams := scrape(t, &ops, func() (Figures, error) { return Figures{}, errors.New("segment dir unreadable") },
		slog.New(slog.NewTextHandler(&log, nil)))
	if fams["doppel_logical_bytes"] != nil {
		t.Errorf("scrape has doppel_logical_bytes although the figures failed")
	}
	if fams[opDurationName] == nil {
		t.Errorf("scrape lost the op metrics because the figures failed")
	}
	if !strings.Contains(log.String(), "segment dir unreadable") {
		t.Errorf("the failure was not logged; log: %q", log.String())
	}
}

// docs/OBSERVABILITY.md describes every doppel metric.
func TestDocsListEveryMetric(t *testing.T) {
	doc, err := os.ReadFile("../../docs/OBSERVABILITY.md")
	if err != nil {
		t.Fatal(err)
	}
	fams, err := NewRegistry(new(Ops), func() (Figures, error) { return Figures{}, nil }).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		name := f.GetName()
		if !strings.HasPrefix(name, "doppel_") {
			continue
		}
		if !bytes.Contains(doc, []byte("`"+name+"`")) && !bytes.Contains(doc, []byte("`"+name+"{")) {
			t.Errorf("docs/OBSERVABILITY.md does not describe `%s`", name)
		}
	}
}
