package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/doppelfs/doppel/internal/control/wire"
	"github.com/doppelfs/doppel/internal/exclude"
	"github.com/doppelfs/doppel/internal/ops"
)

const cloneAbout = `Make DST a writable copy of SRC (a directory or a file) in constant time,
whatever the size of SRC: nothing is copied. DST shows SRC exactly as it was
at that instant (contents, modes, owners, times, xattrs, symlinks, special
files; hard links inside SRC stay hard links among the same names in DST),
minus the excluded paths. Afterwards the two are independent: no change on
one side is ever visible on the other. Clones of clones nest to any depth.

SRC and DST are paths under the same mounted doppel volume or, when it is
not mounted (or with --store), paths inside the volume of the store, / being
its root. DST must not exist, and must not lie inside SRC. Writes buffered
for files anywhere in the volume are committed first.

Exclusions are gitignore-style patterns relative to SRC: "secret" matches a
name at any depth and takes everything below it; a pattern with a slash is
anchored at SRC ("build/out", "/vendor"); "**" matches any number of
directories ("docs/**/*.pdf"); a trailing slash matches directories only
("cache/"). Blank lines and lines starting with # in --exclude-from files
are ignored; negation (!) is not supported.

By default the clone is materialized in the background (its directories and
files get their own metadata records, still sharing all data), throttled so
that foreground work keeps priority; "doppel clones" shows the progress.
--lazy never does: the clone keeps reading through a pinned version of the
volume, which is right for short-lived sandboxes. While a clone reads
through its pin, data that SRC's side overwrites or deletes stays stored
until the clone is materialized or removed.`

func runClone(args []string) error {
	fs := newFlags("clone", "[--exclude PATTERN]... [--exclude-from FILE] [--read-only] [--lazy|--materialize] [--json] SRC DST", cloneAbout)
	f := wire.DefineCloneFlags(fs, "clone")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	for _, file := range f.ExcludeFrom {
		lines, err := readPatterns(file)
		if err != nil {
			return err
		}
		f.Excludes = append(f.Excludes, lines...)
	}
	return cloneCommand(pos, f)
}

// cloneCommand runs a clone request on SRC and DST (pos), mounted or not.
func cloneCommand(pos []string, f *wire.CloneFlags) error {
	store, asJSON := f.Store, f.JSON
	if len(pos) != 2 {
		return usagef("need SRC and DST (see --help)")
	}
	if err := exclude.Check(f.Excludes); err != nil {
		return usagef("%v", err)
	}
	src, err := resolveVolumePath(pos[0], store)
	if err != nil {
		return err
	}
	dst, err := resolveVolumePath(pos[1], store)
	if err != nil {
		return err
	}
	if src.Store != dst.Store {
		return fmt.Errorf("%s and %s are not in the same volume (%s, %s): a clone stays inside its volume", pos[0], pos[1], src.Store, dst.Store)
	}
	req := f.Request(src.Path, dst.Path)
	var res ops.CloneResult
	err = withVolume(src.Store, func(v ops.API) (err error) { res, err = v.Clone(context.Background(), req); return err })
	if err != nil {
		return explainPath(src, err)
	}
	if asJSON {
		return printJSON(res)
	}
	fmt.Println(res.Summary(pos[0], pos[1]))
	return nil
}

// readPatterns reads an exclude file: one pattern a line.
func readPatterns(name string) ([]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out, sc.Err()
}
