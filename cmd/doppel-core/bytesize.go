package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// parseByteSize reads a size in bytes with an optional K, M, G or T
// suffix (powers of 1024), optionally followed by "B" or "iB" (--create,
// --cache-size).
func parseByteSize(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		if i := strings.IndexByte("KMGT", t[n-1]); i >= 0 {
			mult = 1 << (10 * (i + 1))
			t = t[:n-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional K, M, G or T", s)
	}
	return n * mult, nil
}
