package testutil

import (
	"os"
	"strconv"
	"testing"
)

// EnvInt is the integer in environment variable name, or def when it is
// unset; a value that is not an integer fails the test.
func EnvInt(t testing.TB, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s=%q: want an integer", name, s)
	}
	return n
}
