package main

import (
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// startCPUProfile writes a CPU profile of the daemon to path until the
// returned function runs (set DOPPEL_CPUPROFILE to use it).
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// startTrace writes an execution trace of the daemon to path until the
// returned function runs (set DOPPEL_TRACE to use it): where goroutines
// wait, which a CPU profile does not show. Read it with go tool trace.
func startTrace(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { trace.Stop(); f.Close() }, nil
}
