// Package exclude parses and matches the gitignore-style patterns that
// leave paths out of a clone (`doppel clone --exclude`). It knows nothing
// of volumes: the command line checks patterns with it before asking for
// a clone, and the namespace matches entries with it.
//
// Files:
//
//   - exclude.go: Parse, Check and Set.Match.
package exclude
