package main

import (
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

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
