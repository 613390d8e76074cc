package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// run is one suite run as bench/suite.sh leaves it in its run directory:
//
//	results.tsv  WORKLOAD TARGET REP VALUE, one measurement per line
//	meta.txt     KEY=VALUE lines: settings, versions, load, command line
//	machine.md   Markdown table rows describing the machine and tools
//	load.txt     the 1-minute load average, sampled every 10 s (optional)
type run struct {
	samples map[sampleKey][]float64
	meta    map[string]string
	machine string
	load    []float64
}

type sampleKey struct{ workload, target string }

func loadRun(dir string) (*run, error) {
	r := &run{samples: map[sampleKey][]float64{}, meta: map[string]string{}}
	if err := r.readResults(filepath.Join(dir, "results.tsv")); err != nil {
		return nil, err
	}
	if err := r.readMeta(filepath.Join(dir, "meta.txt")); err != nil {
		return nil, err
	}
	machine, err := os.ReadFile(filepath.Join(dir, "machine.md"))
	if err != nil {
		return nil, err
	}
	r.machine = strings.TrimSpace(string(machine))
	if err := r.readLoad(filepath.Join(dir, "load.txt")); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return r, nil
}

func (r *run) readResults(path string) error {
	return eachLine(path, func(n int, line string) error {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return fmt.Errorf("%s:%d: want 4 tab-separated fields, got %d", path, n, len(f))
		}
		v, err := strconv.ParseFloat(f[3], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s:%d: bad value %q", path, n, f[3])
		}
		k := sampleKey{f[0], f[1]}
		r.samples[k] = append(r.samples[k], v)
		return nil
	})
}

func (r *run) readMeta(path string) error {
	return eachLine(path, func(n int, line string) error {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("%s:%d: want KEY=VALUE", path, n)
		}
		r.meta[k] = v
		return nil
	})
}

func (r *run) readLoad(path string) error {
	return eachLine(path, func(n int, line string) error {
		v, err := strconv.ParseFloat(line, 64)
		if err != nil {
			return fmt.Errorf("%s:%d: %v", path, n, err)
		}
		r.load = append(r.load, v)
		return nil
	})
}

// eachLine calls fn for every non-empty line of the file.
func eachLine(path string, fn func(n int, line string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			if err := fn(n, line); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}

// median of the workload's measurements on the target; NaN when there are none.
func (r *run) median(workload, target string) float64 {
	return median(r.samples[sampleKey{workload, target}])
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// metaInt is the meta value KEY as an integer, or 0.
func (r *run) metaInt(key string) int {
	n, _ := strconv.Atoi(r.meta[key])
	return n
}

// targets that have at least one measurement, in the suite's order.
func (r *run) targets() []string {
	var out []string
	for _, t := range strings.Fields(r.meta["targets"]) {
		for k := range r.samples {
			if k.target == t {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// loadSummary describes the sampled load average, e.g. "mean 2.1, max 3.4".
func (r *run) loadSummary() string {
	if len(r.load) == 0 {
		return "not sampled"
	}
	sum, max := 0.0, r.load[0]
	for _, v := range r.load {
		sum += v
		max = math.Max(max, v)
	}
	return fmt.Sprintf("mean %.1f, max %.1f (1-minute load average every 10 s, %d samples)",
		sum/float64(len(r.load)), max, len(r.load))
}
