// Package testutil holds the small helpers tests of every package share:
// failing on errors and making test data. Backend conformance suites live
// beside their interfaces (meta/storetest, blob/storetest).
//
// Files:
//
//   - errors.go: Must and Check.
//   - data.go: RandBytes and SeededBytes.
//   - env.go: EnvInt (test lengths and seeds from the environment).
//   - rand.go: Rand, a randomized test's source, its seed logged.
//   - cpu.go: ProcessCPUSeconds (a server's CPU time, for benchmarks).
//   - delay.go: StartDelayProxy and DelayProxy, a TCP proxy that holds
//     data a while each way (a server's round trips away from loopback).
//
// Subpackage pgtest starts a private PostgreSQL server for a test.
package testutil
