package main

import (
	"context"

	"github.com/doppelfs/doppel/internal/ops"
)

func runSync(args []string) error {
	fs := newFlags("sync", "[--store DIR | MOUNTPOINT]",
		"Make everything written to a volume durable. The kernel does not pass\n"+
			"sync(1)/syncfs(2) on to FUSE file systems; this command, fsync of any file\n"+
			"or directory in the volume, or the daemon's periodic sync (every 5 s) do.")
	store := storeFlag(fs)
	logFlag(fs, "warn")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	dir, err := volumeArg(pos, *store)
	if err != nil {
		return err
	}
	// Opening and closing the store offline syncs it.
	return withVolume(dir, func(v ops.API) error { return v.Sync(context.Background()) })
}

// volumeArg resolves an optional MOUNTPOINT argument or the --store flag.
func volumeArg(pos []string, store string) (string, error) {
	switch {
	case len(pos) > 1:
		return "", usagef("at most one MOUNTPOINT")
	case len(pos) == 1:
		return doppelStoreOf(pos[0])
	}
	return storeDir(store)
}
