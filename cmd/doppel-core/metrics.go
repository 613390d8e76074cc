package main

import (
	"fmt"
	"os"

	"github.com/doppelfs/doppel/internal/control"
	"github.com/doppelfs/doppel/internal/volume"
)

func runMetrics(args []string) error {
	fs := newFlags("metrics", "[--store DIR | MOUNTPOINT]",
		"Print a mounted volume's Prometheus metrics in the text format: what its\n"+
			"daemon serves on GET /metrics of the control socket, which Prometheus or\n"+
			"curl can read directly:\n"+
			"  curl --unix-socket STORE/control.sock http://doppel/metrics\n"+
			"docs/OBSERVABILITY.md describes every metric.")
	store := storeFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	dir, err := volumeArg(pos, *store)
	if err != nil {
		return err
	}
	if volume.LockHolder(dir) <= 0 {
		return fmt.Errorf("no daemon serves volume %s (it is not mounted, or its daemon died): metrics come from the daemon of a mounted volume", dir)
	}
	c, err := control.Dial(dir)
	if err != nil {
		return fmt.Errorf("volume %s is mounted but its daemon does not answer: %w", dir, err)
	}
	scrape, err := c.Metrics()
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(scrape)
	return err
}
