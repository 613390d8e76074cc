// Command blockdedupe deduplicates the files below a directory of a
// reflink-capable file system (XFS, btrfs) block by block: every
// block-aligned block of every file is hashed (BLAKE3), and each block
// whose content was seen before is shared with its first occurrence
// through FIDEDUPERANGE, which compares the bytes before it shares them.
// Runs of duplicate blocks that are contiguous in both files become one
// request. File tails shorter than a block only match tails of the same
// length (the kernel shares them only when both end at EOF).
//
// bench/dedup/run.sh uses it as the thorough block-level reference next to
// duperemove, whose block mode finds only duplicate runs that line up
// with extents. It is a benchmark tool: single-threaded and in memory.
//
//	blockdedupe [-b SIZE] [-n] DIR...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/doppelfs/doppel/bench/internal/datafiles"
)

func main() {
	bs := flag.Int64("b", 4096, "block size in bytes: the file system's block size")
	dryRun := flag.Bool("n", false, "only hash and count the duplicates; share nothing")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: blockdedupe [-b SIZE] [-n] DIR...\n\n"+
			"Share every duplicate block of the files below each DIR (on XFS or btrfs) with\n"+
			"its first occurrence, through FIDEDUPERANGE. Prints what it did as JSON.\n\nOptions:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 || *bs <= 0 || *bs%512 != 0 {
		flag.Usage()
		os.Exit(2)
	}
	d := newDeduper(*bs, *dryRun)
	start := time.Now()
	for _, root := range flag.Args() {
		if err := datafiles.Walk(root, d.file); err != nil {
			fmt.Fprintln(os.Stderr, "blockdedupe:", err)
			os.Exit(1)
		}
	}
	d.stats.Seconds = time.Since(start).Seconds()
	if d.stats.Seconds > 0 {
		d.stats.MiBPerSecond = float64(d.stats.DataBytes) / (1 << 20) / d.stats.Seconds
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d.stats); err != nil {
		fmt.Fprintln(os.Stderr, "blockdedupe:", err)
		os.Exit(1)
	}
	if d.stats.Failed > 0 {
		fmt.Fprintf(os.Stderr, "blockdedupe: %d requests refused, e.g. %s\n", d.stats.Failed, d.stats.FirstFailures[0])
	}
}
