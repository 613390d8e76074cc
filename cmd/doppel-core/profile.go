package main

import (
	"os"
	"runtime/pprof"
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
