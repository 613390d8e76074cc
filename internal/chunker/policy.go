package chunker

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Policy is a chunking policy, as stored in a volume's configuration and
// given on the command line: "cdc" (defaults 16K/64K/256K), "cdc:MIN:AVG:MAX"
// (sizes accept plain bytes or K/M suffixes, e.g. "cdc:16K:64K:256K"),
// or "fixed:SIZE" (e.g. "fixed:4K").
type Policy struct {
	Kind          string // "cdc" or "fixed"
	Min, Avg, Max int    // for cdc
	Size          int    // for fixed
}

const (
	kindCDC   = "cdc"
	kindFixed = "fixed"

	// minCDCMin keeps chunks at least one gear window (64 bytes) long;
	// smaller chunks cost more in index entries than they could save.
	minCDCMin = 64
	// minFixedSize is the smallest sector size in use.
	minFixedSize = 512
	// maxChunk bounds the memory a single chunk may pin in write buffers
	// and readers.
	maxChunk = 16 << 20
)

// DefaultPolicy is content-defined chunking with 16 KiB minimum, 64 KiB
// average and 256 KiB maximum chunks: a common trade-off between dedup
// granularity and per-chunk index overhead.
func DefaultPolicy() Policy {
	return Policy{Kind: kindCDC, Min: 16 << 10, Avg: 64 << 10, Max: 256 << 10}
}

// ParsePolicy parses the textual form of a policy; see Policy. The result
// is always valid for New.
func ParsePolicy(s string) (Policy, error) {
	p, err := parsePolicy(s)
	if err == nil {
		err = p.validate()
	}
	if err != nil {
		return Policy{}, fmt.Errorf("chunker: policy %q: %w", s, err)
	}
	return p, nil
}

func parsePolicy(s string) (Policy, error) {
	kind, rest, hasArgs := strings.Cut(s, ":")
	var args []string
	if hasArgs {
		args = strings.Split(rest, ":")
	}
	switch kind {
	case kindCDC:
		if len(args) == 0 {
			return DefaultPolicy(), nil
		}
		if len(args) != 3 {
			return Policy{}, errors.New(`want "cdc" or "cdc:MIN:AVG:MAX"`)
		}
		var v [3]int
		for i, a := range args {
			n, err := parseSize(a)
			if err != nil {
				return Policy{}, err
			}
			v[i] = n
		}
		return Policy{Kind: kindCDC, Min: v[0], Avg: v[1], Max: v[2]}, nil
	case kindFixed:
		if len(args) != 1 {
			return Policy{}, errors.New(`want "fixed:SIZE", e.g. "fixed:4K"`)
		}
		n, err := parseSize(args[0])
		if err != nil {
			return Policy{}, err
		}
		return Policy{Kind: kindFixed, Size: n}, nil
	default:
		return Policy{}, fmt.Errorf(`unknown kind %q (want "cdc" or "fixed")`, kind)
	}
}

// parseSize accepts decimal bytes with an optional K or M (binary) suffix.
// It is stricter than strconv (no signs, spaces or underscores) so that a
// policy has few spellings.
func parseSize(s string) (int, error) {
	digits, shift := s, 0
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K', 'k':
			digits, shift = s[:n-1], 10
		case 'M', 'm':
			digits, shift = s[:n-1], 20
		}
	}
	if digits == "" {
		return 0, fmt.Errorf("size %q: want a number of bytes, optionally with K or M", s)
	}
	var v int64
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("size %q: want a number of bytes, optionally with K or M", s)
		}
		v = v*10 + int64(c-'0')
		if v > maxChunk {
			return 0, fmt.Errorf("size %q: larger than the %s limit", s, formatSize(maxChunk))
		}
	}
	v <<= shift
	if v > maxChunk {
		return 0, fmt.Errorf("size %q: larger than the %s limit", s, formatSize(maxChunk))
	}
	return int(v), nil
}

// validate checks the limits that keep the chunkers well-defined: in
// particular Avg must be a power of two because the masks are derived from
// its bit length.
func (p Policy) validate() error {
	switch p.Kind {
	case kindCDC:
		if p.Size != 0 {
			return errors.New("cdc policy must not set Size")
		}
		if p.Min < minCDCMin {
			return fmt.Errorf("min %d is below %d bytes", p.Min, minCDCMin)
		}
		if p.Min > p.Avg || p.Avg > p.Max {
			return fmt.Errorf("want min <= avg <= max, have %d, %d, %d", p.Min, p.Avg, p.Max)
		}
		if !isPow2(p.Avg) {
			return fmt.Errorf("avg %d is not a power of two", p.Avg)
		}
		if p.Max > maxChunk {
			return fmt.Errorf("max %d exceeds %s", p.Max, formatSize(maxChunk))
		}
	case kindFixed:
		if p.Min != 0 || p.Avg != 0 || p.Max != 0 {
			return errors.New("fixed policy must not set Min, Avg or Max")
		}
		if p.Size < minFixedSize || p.Size > maxChunk {
			return fmt.Errorf("size %d is outside %d..%s", p.Size, minFixedSize, formatSize(maxChunk))
		}
		if !isPow2(p.Size) {
			return fmt.Errorf("size %d is not a power of two", p.Size)
		}
	default:
		return fmt.Errorf(`unknown kind %q (want "cdc" or "fixed")`, p.Kind)
	}
	return nil
}

func isPow2(n int) bool { return n > 0 && bits.OnesCount(uint(n)) == 1 }

// String returns the canonical form, which ParsePolicy accepts: the kind
// followed by every size, in K or M when that is exact. A policy that has
// no textual form (unknown kind, or fields of the other kind set) is shown
// field by field, for error messages.
func (p Policy) String() string {
	switch {
	case p.Kind == kindCDC && p.Size == 0:
		return kindCDC + ":" + formatSize(p.Min) + ":" + formatSize(p.Avg) + ":" + formatSize(p.Max)
	case p.Kind == kindFixed && p.Min == 0 && p.Avg == 0 && p.Max == 0:
		return kindFixed + ":" + formatSize(p.Size)
	default:
		return fmt.Sprintf("Policy{Kind:%q Min:%d Avg:%d Max:%d Size:%d}", p.Kind, p.Min, p.Avg, p.Max, p.Size)
	}
}

func formatSize(n int) string {
	switch {
	case n != 0 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "M"
	case n != 0 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "K"
	default:
		return strconv.Itoa(n)
	}
}

// DiskBlocks reports whether p cuts the 4 KiB blocks of a disk image (a
// VM disk, an exported file: `doppel nbd --create`).
func (p Policy) DiskBlocks() bool { return p.Kind == kindFixed && p.Size == 4096 }
