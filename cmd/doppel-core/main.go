// Command doppel creates, mounts and inspects doppel volumes: copy-on-write,
// deduplicating file systems in user space.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
)

type command struct {
	summary string
	run     func(args []string) error
}

var commands = map[string]command{
	"init":     {"create a volume", runInit},
	"join":     {"make a store directory for an existing shared volume (another host's)", runJoin},
	"mount":    {"mount a volume (daemon in the background unless -f)", runMount},
	"umount":   {"flush and unmount a mounted volume", runUmount},
	"df":       {"show logical and physical space, dedup ratio; of a subtree with PATH", runDf},
	"stat":     {"show how a file is stored: extents, chunks, shared bytes", runStat},
	"sync":     {"make everything written to a volume durable", runSync},
	"fsck":     {"check a volume, mounted or not, for damage; repair it with --repair", runFsck},
	"status":   {"list mounted volumes with their daemons and counters", runStatus},
	"metrics":  {"print a mounted volume's Prometheus metrics", runMetrics},
	"import":   {"copy a host tree into a volume, in parallel, keeping all metadata", runImport},
	"clone":    {"make an instant, independent copy of a directory or file", runClone},
	"snapshot": {"make an instant read-only copy of a directory or file", runSnapshot},
	"clones":   {"list clones and snapshots with their state and space", runClones},
	"rmclone":  {"remove a clone or snapshot at once, freeing it in the background", runRmclone},
	"diff":     {"show what differs between two trees (fast between clones)", runDiff},
	"scan":     {"run a command once per distinct file content of some trees", runScan},
	"nbd":      {"serve volume files as NBD block devices that give freed space back", runNBD},
}

func usage() {
	fmt.Fprintf(os.Stderr, `doppel: a copy-on-write, deduplicating file system in user space.

Usage: doppel COMMAND [OPTIONS] [ARGS]

Commands:
`)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(os.Stderr, `
The store (volume directory) is --store DIR, else $DOPPEL_STORE, else
$XDG_DATA_HOME/doppel/default (~/.local/share/doppel/default).

Run 'doppel COMMAND --help' for a command's options.
`)
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	name := os.Args[1]
	if name == "-h" || name == "--help" || name == "help" {
		usage()
		return
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "doppel: unknown command %q\n\n", name)
		usage()
		os.Exit(2)
	}
	if err := cmd.run(os.Args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(os.Stderr, "doppel %s: %v\n", name, err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "doppel %s: %v\n", name, err)
		os.Exit(1)
	}
}

// usageError marks mistakes in the command line (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }
