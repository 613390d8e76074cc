package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/doppelfs/doppel/internal/ops"
)

const clonesAbout = `List the clones and snapshots of a volume: where each is, where its source
was when it was made, when, its state (lazy: reads through its pinned
version; materializing: getting its own metadata records in the background,
with the progress in inodes; materialized; removing: rmclone is freeing it),
and the space only it holds: chunk data nothing else references and its own
metadata records (computing it walks each clone's records; --no-space skips
that).

VOLUME is a mount point or a path under one; with --store, or when nothing
is mounted there, the store's volume (default store if omitted).`

func runClones(args []string) error {
	fs := newFlags("clones", "[--json] [--no-space] [--store DIR] [VOLUME]", clonesAbout)
	store := storeFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	noSpace := fs.Bool("no-space", false, "do not compute the space each clone holds")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("at most one VOLUME (see --help)")
	}
	arg := "/"
	if len(pos) == 1 {
		arg = pos[0]
	}
	vp, err := resolveVolumePath(arg, *store)
	if err != nil {
		return err
	}
	var list []ops.CloneInfo
	err = withVolume(vp.Store, func(v ops.API) (err error) { list, err = v.Clones(context.Background(), !*noSpace); return err })
	if err != nil {
		return err
	}
	if *asJSON {
		if list == nil {
			list = []ops.CloneInfo{} // [], not null, when there are none
		}
		return printJSON(list)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tKIND\tORIGIN\tCREATED\tSTATE\tEXCLUSIVE\tMETADATA")
	for _, c := range list {
		kind := "clone"
		if c.ReadOnly {
			kind = "snapshot"
		}
		state := c.State
		if state == "materializing" {
			state = fmt.Sprintf("materializing %d/%d", c.Done, c.Done+c.Stubs)
		}
		path := c.Path
		if path == "" {
			path = fmt.Sprintf("(inode %d)", c.Ino)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", path, kind, c.Origin, c.Created.Format(time.DateTime), state, human(c.Exclusive), human(c.MetaBytes))
	}
	return tw.Flush()
}
