package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/doppelfs/doppel/internal/control"
	"github.com/doppelfs/doppel/internal/volume"
)

func runDf(args []string) error {
	fs := newFlags("df", "[--json] [--store DIR | MOUNTPOINT]",
		"Show the volume's space: logical bytes (what files hold), physical bytes (chunk\n"+
			"data stored after dedup and compression), metadata, and the ratios.")
	store := storeFlag(fs)
	logFlag(fs, "warn")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	dir, err := volumeArg(pos, *store)
	if err != nil {
		return err
	}
	rep, err := spaceReport(dir)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printSpace(os.Stdout, rep)
	return nil
}

// spaceReport asks the daemon when the volume is mounted and opens the
// store directly otherwise.
func spaceReport(dir string) (rep control.SpaceReport, err error) {
	err = onVolume(dir,
		func(c *control.Client) (err error) { rep, err = c.Space(); return err },
		func(v *volume.Volume) (err error) { rep, err = v.Space(); return err })
	return rep, err
}

func printSpace(w io.Writer, r control.SpaceReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "store\t%s\n", r.Store)
	fmt.Fprintf(tw, "logical\t%s\tbytes files hold (holes excluded)\n", human(r.LogicalBytes))
	fmt.Fprintf(tw, "unique\t%s\tdistinct chunk data before compression\n", human(r.RawBytes))
	fmt.Fprintf(tw, "physical\t%s\tchunk data stored (%d chunks)\n", human(r.PhysicalBytes), r.Chunks)
	fmt.Fprintf(tw, "on disk\t%s\tsegment files %s in %d segments, metadata %s\n", human(r.AllocatedBytes+r.MetaBytes), human(r.AllocatedBytes), r.Segments, human(r.MetaBytes))
	fmt.Fprintf(tw, "dedup\t%.2fx\n", r.DedupRatio)
	fmt.Fprintf(tw, "compression\t%.2fx\n", r.CompressRatio)
	fmt.Fprintf(tw, "inodes\t%d\n", r.Inodes)
	tw.Flush()
}

func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
