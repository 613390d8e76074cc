package main

import "github.com/doppelfs/doppel/internal/control"

const snapshotAbout = `Make DST a read-only snapshot of SRC, in constant time: a clone (see
"doppel clone --help") that refuses every change with EROFS and is never
materialized: it keeps the pinned version it shows, so it costs only what
changes in SRC afterwards. Clone the snapshot to get a writable copy back
("doppel clone SNAP DST" restores SRC as it was). Remove it with rm -rf or
"doppel rmclone".`

func runSnapshot(args []string) error {
	fs := newFlags("snapshot", "[--exclude PATTERN]... [--json] SRC DST", snapshotAbout)
	store := storeFlag(fs)
	var excludes stringList
	fs.Var(&excludes, "exclude", "leave out paths matching this pattern (repeatable)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	req := control.CloneRequest{Excludes: excludes, ReadOnly: true, Lazy: true}
	return cloneCommand(pos, *store, req, *asJSON)
}
