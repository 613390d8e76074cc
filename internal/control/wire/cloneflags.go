package wire

import (
	"flag"
	"strings"
)

// CloneFlags are the options of `doppel clone` and `doppel snapshot`,
// defined once for the light front command (which answers them itself on
// a mounted volume) and for doppel-core (which answers everything else).
type CloneFlags struct {
	Store       string
	Excludes    Patterns
	ExcludeFrom Patterns // files of patterns: doppel-core reads them
	ReadOnly    bool
	Lazy        bool
	JSON        bool
}

// Patterns is a repeatable string flag.
type Patterns []string

func (l *Patterns) String() string     { return strings.Join(*l, ",") }
func (l *Patterns) Set(s string) error { *l = append(*l, s); return nil }

// StoreHelp describes --store.
const StoreHelp = "volume directory (default $DOPPEL_STORE or ~/.local/share/doppel/default)"

// DefineCloneFlags defines the options of the command name ("clone" or
// "snapshot"; a snapshot is read-only and lazy) on fs.
func DefineCloneFlags(fs *flag.FlagSet, name string) *CloneFlags {
	f := &CloneFlags{}
	fs.StringVar(&f.Store, "store", "", StoreHelp)
	fs.Var(&f.Excludes, "exclude", "leave out paths matching this pattern (repeatable)")
	fs.BoolVar(&f.JSON, "json", false, "print the result as JSON")
	if name == "snapshot" {
		f.ReadOnly, f.Lazy = true, true
		return f
	}
	fs.Var(&f.ExcludeFrom, "exclude-from", "read patterns from this file, one per line (repeatable)")
	fs.BoolVar(&f.ReadOnly, "read-only", false, "make a read-only clone (a snapshot)")
	fs.BoolVar(&f.Lazy, "lazy", false, "never materialize the clone in the background")
	fs.Bool("materialize", true, "materialize the clone in the background (the default)")
	return f
}

// Request is the clone request for SRC and DST, "/"-rooted in the volume.
func (f *CloneFlags) Request(src, dst string) CloneRequest {
	return CloneRequest{Src: src, Dst: dst, Excludes: f.Excludes, ReadOnly: f.ReadOnly, Lazy: f.Lazy}
}
