// Package crashtest is the crash-loop harness every crash test runs on,
// and the power-loss simulation.
//
// Files:
//
//   - loop.go: the harness: a Workload runs while a Target crashes at a
//     random moment (Cycle, Loop), then the target restarts and both are
//     checked. tests/ uses it with SIGKILL of a mounted daemon
//     (TestCrashLoop, TestCloneCrashLoop).
//   - powerloss_test.go: TestPowerLoss: a volume runs on a metadata store
//     whose unsynced writes can be dropped (Pebble's strict in-memory file
//     system) and on a chunk store that drops every write not covered by a
//     completed Sync (lossyblobs_test.go), and is checked after a
//     simulated power loss at a random moment.
package crashtest
