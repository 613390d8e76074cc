package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/doppelfs/doppel/internal/ops"
)

const diffAbout = `Show the entries that differ between two trees A and B of one volume, one
per line as STATUS<TAB>PATH with PATH relative to A and B, like
"git diff --name-status": A (only in B: added), D (only in A: deleted),
M (modified), T (the type changed).

Modified means a different content, mode, owner, modification time, xattrs,
symlink target or device number (--stat and --json say which). Directory
times are not compared: they follow the entries.

When B is a clone of A (or A of B), or both come from one origin (clones of
clones included), only the entries the change journal names since the clone
are compared: the cost follows what changed, not the size of the trees.
Otherwise (or with --full) both trees are walked. Contents are compared by
their chunks, without reading data (--patch reads the text files it shows).
Paths that A's or B's clone excluded are not reported.

A and B are paths under the same mounted doppel volume or, when it is not
mounted (or with --store), paths inside the volume of the store.`

func runDiff(args []string) error {
	fs := newFlags("diff", "[--name-status|--stat|--patch|--json] [--full] A B", diffAbout)
	store := storeFlag(fs)
	fs.Bool("name-status", true, "print STATUS<TAB>PATH lines (the default)")
	stat := fs.Bool("stat", false, "also say what changed and the sizes, and a summary")
	patch := fs.Bool("patch", false, "also print unified diffs of modified text files")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	full := fs.Bool("full", false, "walk both trees even if they share an origin")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("need A and B (see --help)")
	}
	a, err := resolveVolumePath(pos[0], *store)
	if err != nil {
		return err
	}
	b, err := resolveVolumePath(pos[1], *store)
	if err != nil {
		return err
	}
	if a.Store != b.Store {
		return fmt.Errorf("%s and %s are not in the same volume", pos[0], pos[1])
	}
	req := ops.DiffRequest{A: a.Path, B: b.Path, Patch: *patch, Full: *full}
	var res ops.DiffResult
	err = withVolume(a.Store, func(v ops.API) (err error) { res, err = v.Diff(context.Background(), req); return err })
	if err != nil {
		return explainPath(a, err)
	}
	if *asJSON {
		if res.Entries == nil {
			res.Entries = []ops.DiffEntry{} // [], not null, for equal trees
		}
		return printJSON(res)
	}
	printDiff(os.Stdout, res, *stat, *patch)
	return nil
}

func printDiff(w io.Writer, res ops.DiffResult, stat, patch bool) {
	counts := map[string]int{}
	for _, e := range res.Entries {
		counts[e.Status]++
		if stat {
			detail := strings.Join(e.What, ",")
			if e.Status == "M" && slices.Contains(e.What, "content") {
				detail += fmt.Sprintf(" (%s -> %s)", human(e.OldSize), human(e.NewSize))
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", e.Status, e.Path, e.Type, detail)
		} else {
			fmt.Fprintf(w, "%s\t%s\n", e.Status, e.Path)
		}
	}
	if patch {
		for _, e := range res.Entries {
			if e.Patch != "" {
				fmt.Fprint(w, e.Patch)
			}
		}
	}
	if stat {
		how := "both trees walked"
		if res.Method == "journal" {
			how = fmt.Sprintf("changes since version %d", res.Since)
		}
		fmt.Fprintf(w, "%d added, %d deleted, %d modified, %d type changes; %d entries compared (%s)\n",
			counts["A"], counts["D"], counts["M"], counts["T"], res.Compared, how)
	}
}
