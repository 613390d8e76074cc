package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/doppelfs/doppel/internal/control"
	"github.com/doppelfs/doppel/internal/ops"
)

const dfAbout = `Without PATH, or with a PATH naming a volume's root (its mount point, or / with
--store), show the whole volume's space: logical bytes (what files hold), chunk
data before and after compression, what the store takes on disk (segment files
and metadata separately), and the ratios.

With PATH, show the same for the subtree (or file) at PATH, and its exclusive
bytes: the stored chunk data that only the subtree references, which is what
deleting it would free. A file with a hard link outside the subtree frees
nothing. PATH is a path under a mounted doppel volume, or, if it is not (or
with --store), a path inside the volume of the store, / being its root. A
mounted volume first commits the subtree's buffered writes.

JSON fields, whole volume: store, logical_bytes, raw_bytes (distinct chunk data
before compression), physical_bytes (chunk data stored), meta_bytes (metadata
on disk), allocated_bytes (segment files on disk), segments, chunks, inodes,
dedup_ratio (logical/raw), compression_ratio (raw/physical), reclaimed_bytes.

JSON fields, subtree: store, path, files (distinct non-directories), dirs,
size_bytes (file sizes, holes included), logical_bytes (holes excluded),
chunks, raw_bytes, physical_bytes (distinct chunks the subtree references),
exclusive_chunks, exclusive_bytes (stored bytes of the chunks only the subtree
references), meta_bytes (the subtree's metadata records, uncompressed),
dedup_ratio, compression_ratio.`

func runDf(args []string) error {
	fs := newFlags("df", "[--json] [--store DIR] [PATH]", dfAbout)
	store := storeFlag(fs)
	logFlag(fs, "warn")
	asJSON := fs.Bool("json", false, "print JSON (fields above)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("at most one PATH")
	}
	vp := volumePath{Path: "/"}
	if len(pos) == 1 {
		vp, err = resolveVolumePath(pos[0], *store)
	} else {
		vp.Store, err = storeDir(*store)
	}
	if err != nil {
		return err
	}
	if vp.Path == "/" {
		rep, err := spaceReport(vp.Store)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(rep)
		}
		printSpace(os.Stdout, rep)
		return nil
	}
	u, err := subtreeUsage(vp)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(struct {
			Store string `json:"store"`
			ops.Usage
		}{vp.Store, u})
	}
	printUsage(os.Stdout, vp.Store, u)
	return nil
}

// spaceReport asks the daemon when the volume is mounted and opens the
// store directly otherwise.
func spaceReport(dir string) (rep control.SpaceReport, err error) {
	err = withVolume(dir, func(v ops.API) (err error) { rep, err = v.Space(context.Background()); return err })
	return rep, err
}

func subtreeUsage(vp volumePath) (u ops.Usage, err error) {
	err = withVolume(vp.Store, func(v ops.API) (err error) { u, err = v.Usage(context.Background(), vp.Path); return err })
	return u, explainPath(vp, err)
}

// explainPath says how a path that was not found was understood.
func explainPath(vp volumePath, err error) error {
	if errors.Is(err, syscall.ENOENT) && vp.Mountpoint == "" {
		return fmt.Errorf("%w\n(not below a mounted doppel volume, so taken as a path inside the volume of store %s)", err, vp.Store)
	}
	return err
}

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printSpace(w io.Writer, r control.SpaceReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "store\t%s\n", r.Store)
	fmt.Fprintf(tw, "logical\t%s\tbytes files hold (holes excluded)\n", human(r.LogicalBytes))
	fmt.Fprintf(tw, "unique\t%s\tdistinct chunk data before compression\n", human(r.RawBytes))
	if r.OwnedBlocks > 0 {
		fmt.Fprintf(tw, "physical\t%s\tchunk data stored (%d chunks, %d blocks of disk images)\n", human(r.PhysicalBytes), r.Chunks, r.OwnedBlocks)
	} else {
		fmt.Fprintf(tw, "physical\t%s\tchunk data stored (%d chunks)\n", human(r.PhysicalBytes), r.Chunks)
	}
	if r.Packs {
		fmt.Fprintf(tw, "stored\t%s\tS3 pack objects %s in %d packs, metadata %s (PostgreSQL)\n", human(r.AllocatedBytes+r.MetaBytes), human(r.AllocatedBytes), r.Segments, human(r.MetaBytes))
		fmt.Fprintf(tw, "compactable\t%s\tdead bytes in packs, given back by compaction (background, DOPPEL_COMPACT)\n", human(r.DeadBytes))
	} else {
		fmt.Fprintf(tw, "on disk\t%s\tsegment files %s in %d segments, metadata %s\n", human(r.AllocatedBytes+r.MetaBytes), human(r.AllocatedBytes), r.Segments, human(r.MetaBytes))
	}
	fmt.Fprintf(tw, "dedup\t%.2fx\n", r.DedupRatio)
	fmt.Fprintf(tw, "compression\t%.2fx\n", r.CompressRatio)
	fmt.Fprintf(tw, "inodes\t%d\n", r.Inodes)
	tw.Flush()
}

func printUsage(w io.Writer, store string, u ops.Usage) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "store\t%s\n", store)
	fmt.Fprintf(tw, "path\t%s\t%s, %s\n", u.Path, plural(u.Files, "file"), plural(u.Dirs, "directory"))
	fmt.Fprintf(tw, "size\t%s\tfile sizes, holes included\n", human(u.SizeBytes))
	fmt.Fprintf(tw, "logical\t%s\tbytes files hold (holes excluded)\n", human(u.LogicalBytes))
	fmt.Fprintf(tw, "unique\t%s\tdistinct chunk data before compression\n", human(u.RawBytes))
	fmt.Fprintf(tw, "physical\t%s\tchunk data stored (%d chunks)\n", human(u.PhysicalBytes), u.Chunks)
	fmt.Fprintf(tw, "exclusive\t%s\tchunk data only this subtree uses: deleting it frees this (%d chunks)\n", human(u.ExclusiveBytes), u.ExclusiveChunks)
	fmt.Fprintf(tw, "metadata\t%s\tthe subtree's metadata records, uncompressed\n", human(u.MetaBytes))
	fmt.Fprintf(tw, "dedup\t%.2fx\n", u.DedupRatio)
	fmt.Fprintf(tw, "compression\t%.2fx\n", u.CompressRatio)
	tw.Flush()
}

// plural is "1 file", "2 files", "3 directories".
func plural(n int64, word string) string {
	switch {
	case n == 1:
		return "1 " + word
	case strings.HasSuffix(word, "y"):
		return fmt.Sprintf("%d %sies", n, word[:len(word)-1])
	}
	return fmt.Sprintf("%d %ss", n, word)
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
