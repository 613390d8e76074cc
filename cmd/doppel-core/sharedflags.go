package main

import (
	"fmt"
	"os"

	"github.com/doppelfs/doppel/internal/volume"
)

// What init and join share of their flags for shared volumes.

// metaURLOf is the PostgreSQL URL that --meta gives, or --meta-file's
// first line (of standard input for "-"). A password on the command line
// is visible in ps while the command runs: cmd warns about it.
func metaURLOf(cmd, metaURL, metaFile string) (string, error) {
	if metaURL != "" && metaFile != "" {
		return "", usagef("give --meta or --meta-file, not both")
	}
	if metaFile != "" {
		return readMetaFile(metaFile)
	}
	if metaURL != "" && volume.HasPassword(metaURL) {
		fmt.Fprintf(os.Stderr, "doppel %s: warning: the --meta URL carries a password, which other users can see in ps while %s runs; use --meta-file, PGPASSWORD or ~/.pgpass (the password is not stored either way)\n", cmd, cmd)
	}
	return metaURL, nil
}

// cacheBytesOf parses --cache-size: 0 disables the cache (-1).
func cacheBytesOf(s string) (int64, error) {
	n, err := parseByteSize(s)
	if err != nil {
		return 0, usagef("--cache-size: %v", err)
	}
	if n == 0 {
		n = -1 // no cache
	}
	return n, nil
}
