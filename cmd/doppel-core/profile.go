package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// recordProfiles starts what DOPPEL_CPUPROFILE, DOPPEL_TRACE and
// DOPPEL_ALLOCPROFILE ask for (each a file path) in this process: the
// daemon, or a command that works on an unmounted volume in-process
// (import). The returned function stops them all.
func recordProfiles() (func(), error) {
	stops := []func(){}
	stopAll := func() {
		for _, stop := range stops {
			stop()
		}
	}
	for _, r := range []struct {
		env   string
		start func(string) (func(), error)
	}{{"DOPPEL_CPUPROFILE", startCPUProfile}, {"DOPPEL_TRACE", startTrace},
		{"DOPPEL_ALLOCPROFILE", startAllocProfile}} {
		path := os.Getenv(r.env)
		if path == "" {
			continue
		}
		stop, err := r.start(path)
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("%s: %w", r.env, err)
		}
		stops = append(stops, stop)
	}
	return stopAll, nil
}

// startCPUProfile writes a CPU profile of the daemon to path until the
// returned function runs (set DOPPEL_CPUPROFILE to use it).
func startCPUProfile(path string) (func(), error) {
	return startRecording(path, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startTrace writes an execution trace of the daemon to path until the
// returned function runs (set DOPPEL_TRACE to use it): where goroutines
// wait, which a CPU profile does not show. Read it with go tool trace.
func startTrace(path string) (func(), error) {
	return startRecording(path, trace.Start, trace.Stop)
}

// startAllocProfile writes, when the returned function runs, where the
// daemon allocated its heap memory since it started (pprof's allocs
// profile, sampled every 512 KiB; set DOPPEL_ALLOCPROFILE to use it):
// what makes the collector run. Read it with go tool pprof
// -sample_index=alloc_space.
func startAllocProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return func() {
		pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}, nil
}

// startRecording creates path and runs start on it; the returned function
// runs stop and closes the file.
func startRecording(path string, start func(io.Writer) error, stop func()) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { stop(); f.Close() }, nil
}
