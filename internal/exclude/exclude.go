package exclude

import (
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Patterns are relative to a clone's source:
//
//   - a pattern without a slash (other than a trailing one) matches a name
//     at any depth: "secret" or "*.o";
//   - a pattern with a slash is anchored at the source: "build/out",
//     "/vendor", "docs/**/*.pdf" ("**" matches any number of directories);
//   - a trailing slash matches directories only: "cache/";
//   - an excluded directory takes everything below it with it (the caller
//     stops walking there).
//
// Negation ("!pattern") is refused: a clone cannot bring back what an
// excluded directory took with it without walking the excluded tree.
// Empty patterns and those starting with "#" are ignored.

// Set is a parsed list of patterns; the zero Set excludes nothing.
type Set []pattern

type pattern struct {
	glob     string
	anchored bool
	dirOnly  bool
}

// Check validates patterns and says what is wrong with the first bad one.
func Check(patterns []string) error {
	_, err := Parse(patterns)
	return err
}

// Parse parses patterns.
func Parse(patterns []string) (Set, error) {
	var out Set
	for _, p := range patterns {
		x := pattern{glob: strings.TrimSpace(p)}
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

// Match reports whether the entry at rel (relative to the clone's source,
// no leading slash) matches one of the patterns; dir says whether it is a
// directory.
func (s Set) Match(rel string, dir bool) bool {
	for _, x := range s {
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

// Matcher is Match, or nil if the set is empty.
func (s Set) Matcher() func(rel string, dir bool) bool {
	if len(s) == 0 {
		return nil
	}
	return s.Match
}
