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
//   - powerloss_inplace_test.go: TestPowerLossInPlace: the same for disk
//     images (fixed 4 KiB blocks written through the block export's file
//     layer, most over owned blocks in place), checked block by block and
//     sector by sector.
//   - fencedfs_test.go: each boot's view of the in-memory metadata file
//     system, closed at the cut so that a store left open cannot write on.
package crashtest
