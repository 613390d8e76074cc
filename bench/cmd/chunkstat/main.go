// Command chunkstat shows how well a tree of files deduplicates under
// several chunking policies, without writing anything: it cuts every
// regular file with doppel's own chunker, as `doppel import` does (data
// ranges between holes are cut separately, all-zero chunks become holes),
// hashes the chunks and counts the distinct ones. Used by
// bench/dedup/run.sh to explain the measured physical sizes.
//
// For each policy it prints the distinct chunk bytes, the same rounded up
// to 4 KiB per chunk (doppel's segment files start every chunk on a 4 KiB
// boundary, so this is what the chunks take on disk) and the size
// distribution of the distinct chunks. "whole-file" counts distinct file
// contents, as whole-file dedup would keep them.
//
//	chunkstat [-policy cdc,fixed:4K,...] [-json] PATH...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/doppelfs/doppel/bench/internal/datafiles"
	"github.com/doppelfs/doppel/internal/chunker"
)

func main() {
	policies := flag.String("policy", "cdc,fixed:4K", "comma-separated chunking policies (see doppel init --help)")
	asJSON := flag.Bool("json", false, "print JSON instead of Markdown tables")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: chunkstat [-policy LIST] [-json] PATH...\n\n"+
			"Cut the regular files under each PATH with doppel's chunkers and report\n"+
			"distinct chunk bytes, their on-disk size with 4 KiB alignment, and the\n"+
			"chunk size distribution, per policy and for whole-file dedup.\n\nOptions:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var chunkers []chunker.Chunker
	for _, s := range strings.Split(*policies, ",") {
		p, err := chunker.ParsePolicy(strings.TrimSpace(s))
		if err != nil {
			fail(err)
		}
		ch, err := chunker.New(p)
		if err != nil {
			fail(err)
		}
		chunkers = append(chunkers, ch)
	}
	sc := newScanner(chunkers)
	for _, root := range flag.Args() {
		if err := datafiles.Walk(root, sc.file); err != nil {
			fail(err)
		}
	}
	rep := sc.report()
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fail(err)
		}
		return
	}
	rep.markdown(os.Stdout)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "chunkstat:", err)
	os.Exit(1)
}
