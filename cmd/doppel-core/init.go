package main

import (
	"fmt"

	"github.com/doppelfs/doppel/internal/volume"
)

func runInit(args []string) error {
	fs := newFlags("init", "[--store DIR] [--chunking POLICY] [--compression MODE]",
		"Create a new, empty volume. The store directory must not exist or be empty.")
	store := storeFlag(fs)
	logFlag(fs, "warn")
	chunking := fs.String("chunking", "cdc", "chunking policy: cdc (16K/64K/256K content-defined), cdc:MIN:AVG:MAX, or fixed:SIZE (e.g. fixed:4K for VM images)")
	comp := fs.String("compression", "off", "chunk compression: off, zstd (keep any saving) or auto (keep savings of 1/8 or more)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	dir, err := storeDir(*store)
	if err != nil {
		return err
	}
	if err := volume.Init(dir, volume.InitOptions{Chunking: *chunking, Compression: *comp}); err != nil {
		return err
	}
	fmt.Printf("created volume in %s (chunking %s, compression %s)\n", dir, *chunking, *comp)
	return nil
}
