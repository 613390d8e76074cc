package main

import (
	"context"
	"fmt"

	"github.com/doppelfs/doppel/internal/ops"
)

const rmcloneAbout = `Remove the clone or snapshot at PATH (the root of one: see "doppel clones").
It returns at once: PATH disappears, and its tree is freed in the background,
returning exactly the space that only it referenced. Snapshots, which refuse
rm -r, are removed this way. A crash resumes the freeing at the next mount.`

func runRmclone(args []string) error {
	fs := newFlags("rmclone", "[--store DIR] PATH...", rmcloneAbout)
	store := storeFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("need the PATH of a clone or snapshot (see --help)")
	}
	for _, p := range pos {
		vp, err := resolveVolumePath(p, *store)
		if err != nil {
			return err
		}
		err = withVolume(vp.Store, func(v ops.API) error { return v.RemoveClone(context.Background(), vp.Path) })
		if err != nil {
			return fmt.Errorf("rmclone %s: %w", p, explainPath(vp, err))
		}
	}
	return nil
}
