package volume

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/doppelfs/doppel/internal/content"
)

// CompactEnv tunes the compaction of volumes whose chunk data is in S3
// (content/compact.go); unset, the defaults hold. It is a comma-separated
// list of settings:
//
//   - interval: time between passes (default 1m; "off" disables compaction)
//   - max-live: packs with less than this fraction live are rewritten (0.5)
//   - min-reclaim: bytes a pass must free to run at all (16777216)
//   - retire-grace: how long a rewritten pack stays readable (5m)
//   - sweep: time between orphan sweeps (1h; "off" never)
//
// For example DOPPEL_COMPACT=interval=10s,max-live=0.7,retire-grace=1m.
// Tests use it to compact and sweep continuously with a tiny grace.
const CompactEnv = "DOPPEL_COMPACT"

// compactSettings is CompactEnv parsed.
type compactSettings struct {
	content     content.CompactConfig
	retireGrace time.Duration // 0: the store's default
}

// compactFromEnv reads CompactEnv; a setting it does not know or cannot
// parse fails the open, so that a typo is not silently ignored.
func compactFromEnv() (compactSettings, error) {
	var s compactSettings
	env := os.Getenv(CompactEnv)
	if env == "" {
		return s, nil
	}
	for _, kv := range strings.Split(env, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		var err error
		switch k {
		case "interval":
			s.content.Interval, err = durationOrOff(v)
		case "max-live":
			s.content.MaxLive, err = strconv.ParseFloat(v, 64)
			if err == nil && (s.content.MaxLive <= 0 || s.content.MaxLive > 1) {
				err = fmt.Errorf("want a fraction in (0, 1]")
			}
		case "min-reclaim":
			s.content.MinReclaim, err = strconv.ParseInt(v, 10, 64)
			if err == nil && s.content.MinReclaim == 0 {
				s.content.MinReclaim = -1 // any: 0 would mean the default
			}
		case "retire-grace":
			s.retireGrace, err = time.ParseDuration(v)
			if err == nil && s.retireGrace <= 0 {
				s.retireGrace = time.Nanosecond // as good as none
			}
		case "sweep":
			s.content.SweepEvery, err = durationOrOff(v)
		default:
			err = fmt.Errorf("unknown setting (want interval, max-live, min-reclaim, retire-grace or sweep)")
		}
		if err != nil {
			return s, fmt.Errorf("%s: %q: %v", CompactEnv, kv, err)
		}
	}
	return s, nil
}

// durationOrOff parses a positive duration, or "off" as -1.
func durationOrOff(v string) (time.Duration, error) {
	if v == "off" {
		return -1, nil
	}
	d, err := time.ParseDuration(v)
	if err == nil && d <= 0 {
		err = fmt.Errorf("want a positive duration or off")
	}
	return d, err
}
