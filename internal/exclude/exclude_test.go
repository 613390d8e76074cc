package exclude

import "testing"

func TestMatch(t *testing.T) {
	s, err := Parse([]string{"secret", "*.o", "/vendor", "build/out", "docs/**/*.pdf", "cache/", "# a comment", ""})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rel  string
		dir  bool
		want bool
	}{
		{"secret", false, true},
		{"a/b/secret", true, true},
		{"a/x.o", false, true},
		{"vendor", true, true},
		{"a/vendor", true, false}, // anchored
		{"build/out", false, true},
		{"a/build/out", false, false},
		{"docs/x.pdf", false, true},
		{"docs/a/b/x.pdf", false, true},
		{"cache", true, true},
		{"cache", false, false}, // directories only
		{"main.c", false, false},
	} {
		if got := s.Match(tc.rel, tc.dir); got != tc.want {
			t.Errorf("Match(%q, dir=%v) = %v, want %v", tc.rel, tc.dir, got, tc.want)
		}
	}
	if Set(nil).Matcher() != nil || s.Matcher() == nil {
		t.Error("Matcher: nil exactly for an empty set")
	}
}

func TestRefused(t *testing.T) {
	for _, p := range []string{"!keep", "[", "/"} {
		if err := Check([]string{p}); err == nil {
			t.Errorf("Check(%q) accepted it", p)
		}
	}
}
