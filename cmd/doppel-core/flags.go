package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/doppelfs/doppel/internal/control/wire"
	"github.com/doppelfs/doppel/internal/volume"
)

// newFlags makes a flag set whose --help prints the synopsis and options.
func newFlags(name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet("doppel "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: doppel %s %s\n\n%s\n\nOptions:\n", name, synopsis, about)
		fs.PrintDefaults()
	}
	return fs
}

// parse accepts options before and after positional arguments. For a
// command with --log-level (logFlag), it installs the logger that names as
// slog's default.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if f := fs.Lookup("log-level"); f != nil {
		log, err := newLogger(f.Value.String())
		if err != nil {
			return nil, err
		}
		slog.SetDefault(log)
	}
	return pos, nil
}

func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// storeDir resolves the --store flag or the default store.
func storeDir(flagValue string) (string, error) {
	if flagValue != "" {
		return filepath.Abs(flagValue)
	}
	return volume.DefaultStore()
}

// logFlag adds --log-level to a command that logs (the daemon, or a
// command that may open a store). Logs go to stderr.
func logFlag(fs *flag.FlagSet, def string) *string {
	return fs.String("log-level", def, "log level: debug, info, warn, error")
}

// newLogger builds the process logger at the given level.
func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return nil, usagef("bad --log-level %q (debug, info, warn, error)", level)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// parseMountpoint parses options and the one MOUNTPOINT argument, made
// absolute.
func parseMountpoint(fs *flag.FlagSet, args []string) (string, error) {
	pos, err := parse(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", usagef("need exactly one MOUNTPOINT (see --help)")
	}
	return filepath.Abs(pos[0])
}

const storeHelp = wire.StoreHelp

// storeFlag adds the --store option every volume command takes.
func storeFlag(fs *flag.FlagSet) *string { return fs.String("store", "", storeHelp) }
