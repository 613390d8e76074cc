package main

import "github.com/doppelfs/doppel/internal/control/wire"

const snapshotAbout = `Make DST a read-only snapshot of SRC, in constant time: a clone (see
"doppel clone --help") that refuses every change with EROFS and is never
materialized: it keeps the pinned version it shows, so it costs only what
changes in SRC afterwards. Clone the snapshot to get a writable copy back
("doppel clone SNAP DST" restores SRC as it was). Remove it with rm -rf or
"doppel rmclone".`

func runSnapshot(args []string) error {
	fs := newFlags("snapshot", "[--exclude PATTERN]... [--json] SRC DST", snapshotAbout)
	f := wire.DefineCloneFlags(fs, "snapshot")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	return cloneCommand(pos, f)
}
