// Package datafiles walks the regular files of a tree and finds their data
// ranges, for the benchmark tools that read a dataset the way doppel import
// does: each inode once, holes skipped.
package datafiles
