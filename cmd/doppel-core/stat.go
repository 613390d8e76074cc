package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/doppelfs/doppel/internal/ops"
)

const statAbout = `Show how FILE is stored: its size, its extents (which part of which chunk
holds each range of the file; gaps are holes), the chunks it uses with their
stored and uncompressed sizes and reference counts, and how many of its bytes
lie in chunks that other files use too (after cp, which shares extents, or
through dedup). Hard links share the file itself, not chunks: see "links".

FILE is a path under a mounted doppel volume, or, if it is not (or with
--store), a path inside the volume of the store, / being its root. A mounted
volume first commits the file's buffered writes. Symlinks are not followed.

JSON fields: store, path, ino, type, nlink, size_bytes, logical_bytes (bytes
the extents map), shared_bytes, extents (offset, length, chunk: the first 16
hex digits of the chunk's hash, chunk_offset), chunks (hash, stored_bytes,
raw_bytes, refs: extent references in the whole volume, file_refs: those from
this file), in order of first use.`

func runStat(args []string) error {
	fs := newFlags("stat", "[--json] [--store DIR] FILE", statAbout)
	store := storeFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON (fields above)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("need exactly one FILE (see --help)")
	}
	vp, err := resolveVolumePath(pos[0], *store)
	if err != nil {
		return err
	}
	var st ops.FileStat
	err = withVolume(vp.Store, func(v ops.API) (err error) { st, err = v.Stat(context.Background(), vp.Path); return err })
	if err != nil {
		return explainPath(vp, err)
	}
	if *asJSON {
		return printJSON(struct {
			Store string `json:"store"`
			ops.FileStat
		}{vp.Store, st})
	}
	printStat(os.Stdout, vp.Store, st)
	return nil
}

func printStat(w io.Writer, store string, st ops.FileStat) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "store\t%s\n", store)
	switch {
	case st.ThroughPin && st.Ino == 0:
		fmt.Fprintf(tw, "path\t%s\t%s of a clone, not materialized yet: read through the clone's pin\n", st.Path, st.Type)
	case st.ThroughPin:
		fmt.Fprintf(tw, "path\t%s\t%s, inode %d, %s; not materialized yet: read through the clone's pin\n", st.Path, st.Type, st.Ino, plural(int64(st.Nlink), "link"))
	default:
		fmt.Fprintf(tw, "path\t%s\t%s, inode %d, %s\n", st.Path, st.Type, st.Ino, plural(int64(st.Nlink), "link"))
	}
	fmt.Fprintf(tw, "size\t%s\t%d bytes\n", human(st.SizeBytes), st.SizeBytes)
	fmt.Fprintf(tw, "logical\t%s\tmapped by %d extents; the rest is holes\n", human(st.LogicalBytes), len(st.Extents))
	fmt.Fprintf(tw, "shared\t%s\tin chunks that other files use too\n", human(st.SharedBytes))
	tw.Flush()
	if len(st.Extents) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "OFFSET\tLENGTH\tCHUNK\tCHUNK OFFSET\t\n")
	var end int64
	hole := func(to int64) {
		if to > end {
			fmt.Fprintf(tw, "%d\t%d\thole\t\t\n", end, to-end)
		}
	}
	for _, x := range st.Extents {
		hole(x.Offset)
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t\n", x.Offset, x.Length, x.Chunk, x.ChunkOffset)
		end = x.Offset + x.Length
	}
	hole(st.SizeBytes)
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "CHUNK\tSTORED\tRAW\tREFS\tFILE REFS\t\n")
	for _, c := range st.Chunks {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", c.Hash[:16], c.StoredBytes, c.RawBytes, c.Refs, c.FileRefs)
	}
	tw.Flush()
}
