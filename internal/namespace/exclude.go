package namespace

import (
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/doppelfs/doppel/internal/schema"
)

// Exclusions are gitignore-style patterns, relative to a clone's source:
//
//   - a pattern without a slash (other than a trailing one) matches a name
//     at any depth: "secret" or "*.o";
//   - a pattern with a slash is anchored at the source: "build/out",
//     "/vendor", "docs/**/*.pdf" ("**" matches any number of directories);
//   - a trailing slash matches directories only: "cache/";
//   - an excluded directory takes everything below it with it.
//
// Negation ("!pattern") is refused: a clone cannot bring back what an
// excluded directory took with it without walking the excluded tree.
type exclusion struct {
	glob     string
	anchored bool
	dirOnly  bool
}

// CheckExcludes validates patterns and says what is wrong with the first
// bad one.
func CheckExcludes(patterns []string) error {
	_, err := parseExcludes(patterns)
	return err
}

func parseExcludes(patterns []string) ([]exclusion, error) {
	var out []exclusion
	for _, p := range patterns {
		x := exclusion{glob: strings.TrimSpace(p)}
		if x.glob == "" || strings.HasPrefix(x.glob, "#") {
			continue
		}
		if strings.HasPrefix(x.glob, "!") {
			return nil, fmt.Errorf("exclude pattern %q: negation is not supported", p)
		}
		if strings.HasSuffix(x.glob, "/") {
			x.dirOnly = true
			x.glob = strings.TrimRight(x.glob, "/")
		}
		if strings.Contains(x.glob, "/") {
			x.anchored = true
			x.glob = strings.TrimLeft(x.glob, "/")
		}
		if x.glob == "" || !doublestar.ValidatePattern(x.glob) {
			return nil, fmt.Errorf("exclude pattern %q is not a valid glob", p)
		}
		out = append(out, x)
	}
	return out, nil
}

// excluded reports whether the entry at rel (relative to the clone's
// source, no leading slash) matches one of xs.
func excluded(xs []exclusion, rel string, dir bool) bool {
	for _, x := range xs {
		if x.dirOnly && !dir {
			continue
		}
		target := rel
		if !x.anchored {
			target = path.Base(rel)
		}
		if ok, _ := doublestar.Match(x.glob, target); ok {
			return true
		}
	}
	return false
}

// pinExcluder tells the retainer which paths the clone of the pin at
// version pin leaves out, so that the pin keeps only what the clone can
// see (versions.Excluder). The clone's record, or its gone-clone record,
// says; a pin with neither keeps everything.
func (v *Volume) pinExcluder(pin uint64) (func(string, bool) bool, error) {
	if m, ok := v.pinExcludes.Load(pin); ok {
		return m.(func(string, bool) bool), nil
	}
	var match func(string, bool) bool
	for _, bounds := range []func() ([]byte, []byte){schema.CloneRange, schema.GoneRange} {
		lower, upper := bounds()
		err := scan(v.meta, lower, upper, func(_, val []byte) error {
			rec, err := schema.DecodeClone(val)
			if err != nil || rec.Pin != pin {
				return err
			}
			xs, err := parseExcludes(rec.Excludes)
			match = excludeMatcher(xs)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	v.pinExcludes.Store(pin, match)
	return match, nil
}

// excludeMatcher is excluded for xs, or nil if xs is empty.
func excludeMatcher(xs []exclusion) func(string, bool) bool {
	if len(xs) == 0 {
		return nil
	}
	return func(rel string, dir bool) bool { return excluded(xs, rel, dir) }
}
