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
//   - socketpair.go: SocketPair, two connected Unix sockets.
//   - delay.go: StartDelayProxy and DelayProxy, a TCP proxy that holds
//     data a while each way (a server's round trips away from loopback).
//
// Subpackage pgtest starts a private PostgreSQL server for a test;
// tlstest makes throwaway X.509 credentials (a CA, a server and a client
// certificate) in the layout qemu and libnbd read.
package testutil
