// Package volume creates and opens doppel volumes. A volume is one
// directory holding everything needed to mount it:
//
//	doppel.json   format file: format version and volume UUID
//	meta/         metadata store (Pebble)
//	chunks/       chunk store (segment files)
//	lock          held (flock) by the process that has the volume open;
//	              it contains that process's PID
//	control.sock  the mounted daemon's control socket
//	daemon.log    the background daemon's log
//
// Files:
//
//   - volume.go: Init, Open (the stores, crash recovery, the engine and
//     the namespace) and Close.
//   - ops.go: Operations, the volume as the command line uses it
//     (ops.API).
//   - check.go: OpenForCheck, the stores of an unmounted volume for fsck,
//     without starting the file system on them.
//   - format.go, lock.go, paths.go: the format file, the lock, the
//     default store.
//   - space.go, figures.go, fsck.go, import.go: df, metrics figures, the
//     online check and the import.
//   - compact.go, journal_env.go: the settings tests and operators give
//     through the environment (DOPPEL_COMPACT, DOPPEL_JOURNAL).
//   - readahead.go: KernelReadahead, how far the kernel reads ahead on
//     the mount.
//   - nopblobs.go: a chunk store that stores nothing, while init writes
//     metadata only.
package volume
