package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/voltest"
	dvolume "github.com/doppelfs/doppel/internal/volume"
)

// statusEntry is one volume of `doppel status --json`.
type statusEntry struct {
	Mountpoint string `json:"mountpoint"`
	Store      string `json:"store"`
	PID        int    `json:"pid"`
	Responding bool   `json:"responding"`
	Error      string `json:"error"`
	Daemon     *struct {
		Store           string  `json:"store"`
		Mountpoint      string  `json:"mountpoint"`
		PID             int     `json:"pid"`
		UptimeSeconds   float64 `json:"uptime_seconds"`
		Requests        uint64  `json:"fuse_requests"`
		WrittenBytes    int64   `json:"written_bytes"`
		DedupBytes      int64   `json:"deduplicated_bytes"`
		StoredBytes     int64   `json:"stored_bytes"`
		MetaURL         string  `json:"meta_url"`
		MetaSchema      string  `json:"meta_schema"`
		DataURL         string  `json:"data_url"`
		MultiHost       bool    `json:"multi_host"`
		DedupBackground bool    `json:"dedup_background"`
		Sessions        []struct {
			ID    int64  `json:"id"`
			PID   int    `json:"pid"`
			Mount string `json:"mount"`
			This  bool   `json:"this"`
			Alive bool   `json:"alive"`
		} `json:"sessions"`
		SessionsError string `json:"sessions_error"`
	} `json:"daemon"`
}

// doppelStatus runs doppel status --json and returns the entries of mnts,
// failing the test when one is missing. Other volumes may be listed too.
func doppelStatus(t *testing.T, mnts ...string) []statusEntry {
	t.Helper()
	out, err := runDoppel(time.Minute, "status", "--json")
	if err != nil {
		t.Fatalf("doppel status --json: %v\n%s", err, out)
	}
	var st struct{ Volumes []statusEntry }
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("doppel status --json is not the expected JSON: %v\n%s", err, out)
	}
	var found []statusEntry
	for _, mnt := range mnts {
		i := slices.IndexFunc(st.Volumes, func(e statusEntry) bool { return e.Mountpoint == mnt })
		if i < 0 {
			t.Fatalf("doppel status does not list %s:\n%s", mnt, out)
		}
		found = append(found, st.Volumes[i])
	}
	return found
}

// TestStatusAndMetrics mounts a volume, writes to it, and checks what
// doppel status and the daemon's Prometheus metrics say about it.
func TestStatusAndMetrics(t *testing.T) {
	v := newVolume(t)
	data := testutil.SeededBytes(50, 3*MiB)
	writeFileSync(t, v.path("a"), data)
	writeFileSync(t, v.path("b"), data) // the same bytes again: deduplicated
	written := int64(2 * len(data))

	e := doppelStatus(t, v.Mnt)[0]
	if !e.Responding || e.Daemon == nil {
		t.Fatalf("the daemon of %s does not answer: %s", v.Mnt, e.Error)
	}
	d := e.Daemon
	if e.Store != v.Store || d.Store != v.Store || d.Mountpoint != v.Mnt {
		t.Errorf("status gives store %q (daemon: %q, %q), want %q on %q", e.Store, d.Store, d.Mountpoint, v.Store, v.Mnt)
	}
	if pids := daemonPIDs(v.Mnt); !slices.Contains(pids, d.PID) || e.PID != d.PID {
		t.Errorf("status gives daemon pid %d (lock holder %d); the daemon processes are %v", d.PID, e.PID, pids)
	}
	if d.Requests == 0 || d.WrittenBytes < written || d.DedupBytes < int64(len(data)) || d.StoredBytes < int64(len(data)) {
		t.Errorf("status counters %+v: want requests > 0, written >= %d, deduplicated and stored >= %d", *d, written, len(data))
	}
	if out, err := runDoppel(time.Minute, "status"); err != nil || !bytes.Contains(out, []byte(v.Mnt)) {
		t.Errorf("doppel status (text): %v; does not name %s:\n%s", err, v.Mnt, out)
	}

	fams := scrapeMetrics(t, v.Mnt)
	writes := opHistogram(t, fams, "write")
	if writes.GetSampleCount() == 0 || writes.GetSampleSum() <= 0 {
		t.Errorf("write requests: count %d, total time %v s; want both > 0", writes.GetSampleCount(), writes.GetSampleSum())
	}
	// The kernel sends at most 1 MiB per write request (max_write).
	if min := uint64(written / MiB); writes.GetSampleCount() < min {
		t.Errorf("%d write requests for %d bytes; want at least %d", writes.GetSampleCount(), written, min)
	}
	if n := opHistogram(t, fams, "fsync").GetSampleCount(); n < 2 {
		t.Errorf("%d fsync requests after two fsyncs", n)
	}
	for _, c := range []struct {
		name     string
		min, max float64
	}{
		{"doppel_written_bytes_total", float64(written), 1e18},
		{"doppel_deduplicated_bytes_total", float64(len(data)), float64(written)},
		// The second copy is deduplicated: about one copy's bytes is stored.
		{"doppel_stored_bytes_total", float64(len(data)), float64(len(data)) * 1.5},
		{"doppel_logical_bytes", float64(written), float64(written)},
		{"doppel_physical_bytes", float64(len(data)), float64(len(data))},
		{"doppel_inodes", 3, 3},
		{"doppel_dirty_bytes", 0, 0},
	} {
		if got := metricValue(t, fams, c.name); got < c.min || got > c.max {
			t.Errorf("%s = %v, want it in [%v, %v]", c.name, got, c.min, c.max)
		}
	}
	// The command reads the same scrape as a client of the socket would.
	if got := metricValue(t, scrapeMetrics(t, "--store", v.Store), "doppel_inodes"); got != 3 {
		t.Errorf("doppel metrics --store: doppel_inodes %v, want 3", got)
	}
}

// TestStatusShowsWhereTheVolumeLives checks that doppel status names a
// shared volume's metadata (the PostgreSQL URL, never its password, and
// the schema) and its chunk data (the S3 URL, or the store directory's
// segment files), and nothing of the kind for an embedded volume. It
// tests the kind DOPPEL_TEST_META picks.
func TestStatusShowsWhereTheVolumeLives(t *testing.T) {
	v := newVolume(t)
	e := doppelStatus(t, v.Mnt)[0]
	if !e.Responding || e.Daemon == nil {
		t.Fatalf("the daemon of %s does not answer: %s", v.Mnt, e.Error)
	}
	d := e.Daemon
	text, err := runDoppel(time.Minute, "status")
	if err != nil {
		t.Fatalf("doppel status: %v\n%s", err, text)
	}
	if !voltest.Postgres() {
		if d.MetaURL != "" || d.MetaSchema != "" || d.DataURL != "" {
			t.Errorf("embedded volume: status gives metadata %q (schema %q), data %q; want none", d.MetaURL, d.MetaSchema, d.DataURL)
		}
		if bytes.Contains(text, []byte("metadata ")) || bytes.Contains(text, []byte("sessions ")) || len(d.Sessions) > 0 {
			t.Errorf("embedded volume: doppel status shows a metadata line or sessions:\n%s", text)
		}
		return
	}
	if d.MetaURL != voltest.MetaURL() || !strings.HasPrefix(d.MetaSchema, "doppel_") {
		t.Errorf("status gives metadata %q, schema %q; want %q, doppel_<uuid>", d.MetaURL, d.MetaSchema, voltest.MetaURL())
	}
	wantData := "segment files in the store directory"
	if voltest.S3() {
		if !strings.HasPrefix(d.DataURL, "s3://") {
			t.Errorf("status gives data %q; want the volume's s3:// URL", d.DataURL)
		}
		wantData = d.DataURL
	} else if d.DataURL != "" {
		t.Errorf("status gives data %q; want none (the segment files)", d.DataURL)
	}
	for _, want := range []string{"metadata   " + voltest.MetaURL() + " (schema " + d.MetaSchema + ")", "data       " + wantData} {
		if !bytes.Contains(text, []byte(want)) {
			t.Errorf("doppel status does not show %q:\n%s", want, text)
		}
	}
	// The volume's sessions: this daemon's, alive, with its mount point.
	if len(d.Sessions) != 1 || !d.Sessions[0].This || !d.Sessions[0].Alive || d.Sessions[0].Mount != v.Mnt ||
		d.Sessions[0].PID != e.PID {
		t.Errorf("status gives sessions %+v (%s); want this daemon's (pid %d, %s), alive", d.Sessions, d.SessionsError, e.PID, v.Mnt)
	} else if want := fmt.Sprintf("sessions   %d: host ", d.Sessions[0].ID); !bytes.Contains(text, []byte(want)) ||
		!bytes.Contains(text, []byte(v.Mnt+"; alive")) {
		t.Errorf("doppel status does not list the session (%q, %q):\n%s", want, v.Mnt+"; alive", text)
	}
	asJSON, _ := runDoppel(time.Minute, "status", "--json")
	if pw := os.Getenv("PGPASSWORD"); pw == "" || bytes.Contains(text, []byte(pw)) || bytes.Contains(asJSON, []byte(pw)) {
		t.Errorf("doppel status shows the database password (or the test has none to look for: %q)", pw)
	}
}

// scrapeMetrics runs doppel metrics with args and parses its output as
// the Prometheus text format.
func scrapeMetrics(t *testing.T, args ...string) map[string]*dto.MetricFamily {
	t.Helper()
	out, err := runDoppel(time.Minute, append([]string{"metrics"}, args...)...)
	if err != nil {
		t.Fatalf("doppel metrics %v: %v\n%s", args, err, out)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("doppel metrics output is not the Prometheus text format: %v", err)
	}
	return fams
}

func opHistogram(t *testing.T, fams map[string]*dto.MetricFamily, op string) *dto.Histogram {
	t.Helper()
	for _, m := range fams["doppel_fuse_request_duration_seconds"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "op" && l.GetValue() == op {
				return m.GetHistogram()
			}
		}
	}
	t.Fatalf("no doppel_fuse_request_duration_seconds{op=%q} in the metrics", op)
	return nil
}

// metricValue returns the value of an unlabelled counter or gauge.
func metricValue(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil || len(f.GetMetric()) != 1 {
		t.Fatalf("metrics lack %s", name)
	}
	m := f.GetMetric()[0]
	return m.GetCounter().GetValue() + m.GetGauge().GetValue()
}

// TestStatusListsSilentDaemons checks that a volume whose daemon hangs or
// died is listed as such while the others are listed as usual.
func TestStatusListsSilentDaemons(t *testing.T) {
	healthy, hung, dead := newVolume(t), newVolume(t), newVolume(t)

	pids := daemonPIDs(hung.Mnt)
	if len(pids) != 1 {
		t.Fatalf("daemons of %s: %v", hung.Mnt, pids)
	}
	// Stopped, the daemon keeps its lock and socket but answers nothing.
	// Nothing here touches its mount until it continues.
	t.Cleanup(func() { syscall.Kill(pids[0], syscall.SIGCONT) })
	if err := syscall.Kill(pids[0], syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}

	killed := daemonPIDs(dead.Mnt)
	for _, pid := range killed {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	// A dying process's cmdline empties before its files close: wait for
	// the volume lock too, or status may still meet the exiting daemon
	// (on S3 volumes, with many connections to close, it did).
	for deadline := time.Now().Add(10 * time.Second); len(daemonPIDs(dead.Mnt)) > 0 || dvolume.LockHolder(dead.Store) != 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("daemon did not die after SIGKILL")
		}
	}
	dead.mounted = false

	all := doppelStatus(t, healthy.Mnt, hung.Mnt, dead.Mnt)
	if e := all[0]; !e.Responding || e.Daemon == nil {
		t.Errorf("healthy volume: not responding (%s)", e.Error)
	}
	if e := all[1]; e.Responding || e.PID != pids[0] || !strings.Contains(e.Error, "does not answer") {
		t.Errorf("stopped daemon: responding %v, pid %d (want %d), error %q", e.Responding, e.PID, pids[0], e.Error)
	}
	if e := all[2]; e.Responding || e.PID != 0 || !strings.Contains(e.Error, "stale mount") {
		t.Errorf("killed daemon: responding %v, pid %d, error %q; want a stale mount", e.Responding, e.PID, e.Error)
	}
	if err := syscall.Kill(pids[0], syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if e := doppelStatus(t, hung.Mnt)[0]; !e.Responding {
		t.Errorf("the continued daemon does not answer: %s", e.Error)
	}
	if _, err := os.Stat(hung.path()); err != nil {
		t.Errorf("the continued daemon's mount: %v", err)
	}
}
