package testutil

import "testing"

// Must returns x, or panics on err: the failing test then reports the
// panic with its stack. For use where a test has no t at hand (helpers
// that return values).
func Must[T any](x T, err error) T {
	if err != nil {
		panic(err)
	}
	return x
}

// Check fails t at once on err.
func Check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
